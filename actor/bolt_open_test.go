package actor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/actor/actortest"
)

// TestUnopenableStorage: a file damaged where every sandbox depends on it cannot be
// served at all; Open fails with ErrCorrupt, naming the file and what to do, leaves the
// file as it was and holds nothing open (leakcheck), so the operator can mend it.
func TestUnopenableStorage(t *testing.T) {
	t.Parallel()
	// Meta pages are 0 and 1; each names the free list's page at byte 48
	// (go.etcd.io/bbolt/internal/common/meta.go).
	metas := func(file []byte, pageSize int) []uint64 { return []uint64{0, 1} }
	freelist := func(file []byte, pageSize int) []uint64 {
		return []uint64{binary.LittleEndian.Uint64(file[48:]), binary.LittleEndian.Uint64(file[pageSize+48:])}
	}
	tests := []struct {
		name  string
		pages func(file []byte, pageSize int) []uint64
		fix   string
	}{
		{"both meta pages", metas, "restore it from a backup"},
		{"free list", freelist, "bbolt surgery freelist abandon"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newTestNode(t, nil)
			mustCreate(t, n, "a1")
			mustCreate(t, n, "b1")
			must(t, n.DeleteSandbox(tctx(t), "b1")) // something on the free list
			closeNode(t, n)
			path := filepath.Join(n.cfg.DataDir, "actors.db")
			file, err := os.ReadFile(path)
			must(t, err)
			for _, id := range tc.pages(file, os.Getpagesize()) {
				_, err := actortest.DamagePage(path, id, os.Getpagesize())
				must(t, err)
			}
			before, err := os.ReadFile(path)
			must(t, err)

			_, err = Open(context.Background(), n.cfg)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.fix) {
				t.Fatalf("Open = %v, want ErrCorrupt naming %s and saying %q", err, path, tc.fix)
			}
			after, err := os.ReadFile(path)
			must(t, err)
			if !bytes.Equal(before, after) {
				t.Error("Open changed the damaged file")
			}
		})
	}
}

// TestDamagedIndex: a damaged page of the sandbox index (which only lists sandboxes)
// does not stop a node from opening, and every sandbox's records still read and
// write; a list fails with ErrCorrupt after the sandboxes before the damaged page.
func TestDamagedIndex(t *testing.T) {
	t.Parallel()
	ctx := tctx(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "actors.db")
	s, err := OpenBolt(path)
	must(t, err)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			if err := s.Write(ctx, &Batch{Sandbox: fmt.Sprintf("sb%03d", i), Ops: []Op{{Key: []byte("k"), Value: []byte("v")}}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	must(t, s.Close())
	leaves, pageSize, err := actortest.BoltLeaves(path, string(bucketIndex))
	must(t, err)
	if len(leaves) < 2 {
		t.Fatalf("the index has %d leaf pages, want several", len(leaves))
	}
	last := leaves[len(leaves)-1]
	_, err = actortest.DamagePage(path, last.ID, pageSize)
	must(t, err)

	n, err := Open(ctx, &Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	t.Cleanup(func() { must(t, n.Close(context.Background())) })
	var listed []string
	err = n.store.Sandboxes(ctx, nil, func(id string, _ []byte) error { listed = append(listed, id); return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Sandbox != "" || !strings.Contains(err.Error(), "list of sandboxes") {
		t.Errorf("Sandboxes = %v, want a *CorruptError for the index", err)
	}
	if want := 400 - len(last.Keys); len(listed) != want {
		t.Errorf("listed %d sandboxes before the damaged page, want %d", len(listed), want)
	}
	_, err = n.ListSandboxes(ctx, nil)
	wantErr(t, err, ErrCorrupt)
	// A write puts its sandbox in the index: one listed on the damaged page fails (and
	// is then known damaged); the others write and read.
	inLast := string(last.Keys[0])
	wantErr(t, n.store.Write(ctx, &Batch{Sandbox: inLast, Ops: []Op{{Key: []byte("k2"), Value: []byte("v2")}}}), ErrCorrupt)
	must(t, n.store.Write(ctx, &Batch{Sandbox: "sb000", Ops: []Op{{Key: []byte("k2"), Value: []byte("v2")}}}))
	must(t, n.store.Read(ctx, "sb000", func(r Reader) error {
		if string(r.Get([]byte("k"))) != "v" || string(r.Get([]byte("k2"))) != "v2" {
			return errors.New("records of sb000 lost")
		}
		return nil
	}))
}
