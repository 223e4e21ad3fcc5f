package actor

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The on-disk page layout of bbolt (go.etcd.io/bbolt/internal/common/page.go), read
// here to find which page holds a key: a 16-byte header (id u64, flags u16, count u16,
// overflow u32), then count 16-byte elements. A branch element is pos u32, ksize u32,
// pgid u64; a leaf element is flags u32, pos u32, ksize u32, vsize u32. pos counts
// from the element's own start.
const (
	pageHeaderSize = 16
	pageElemSize   = 16
	pageBranch     = 0x01
	pageLeaf       = 0x02
)

// leafPage is one leaf page of a bucket and the keys on it.
type leafPage struct {
	id   uint64
	keys [][]byte
}

// bucketLeaves returns every leaf page of a top-level bucket of the (closed) bbolt file
// at path, in key order, by reading the pages from the file.
func bucketLeaves(tb testing.TB, path string, bucket []byte) (leaves []leafPage, pageSize int) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	must(tb, err)
	var root uint64
	must(tb, db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(bucket).Root())
		return nil
	}))
	pageSize = db.Info().PageSize
	must(tb, db.Close())
	if root == 0 {
		tb.Fatalf("bucket %q is inline: give it more data", bucket)
	}
	file, err := os.ReadFile(path)
	must(tb, err)
	var walk func(id uint64)
	walk = func(id uint64) {
		p := file[int(id)*pageSize:]
		flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
		for i := range count {
			e := p[pageHeaderSize+i*pageElemSize:]
			switch flags {
			case pageBranch:
				walk(binary.LittleEndian.Uint64(e[8:]))
			case pageLeaf:
				pos, ksize := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
				if i == 0 {
					leaves = append(leaves, leafPage{id: id})
				}
				l := &leaves[len(leaves)-1]
				l.keys = append(l.keys, bytes.Clone(e[pos:pos+ksize]))
			default:
				tb.Fatalf("page %d: flags %#x", id, flags)
			}
		}
	}
	walk(root)
	return leaves, pageSize
}

// damagePage overwrites page id of the file at path with garbage, as a bad sector or
// a torn write would leave it; bbolt then panics on reaching it.
func damagePage(tb testing.TB, path string, id uint64, pageSize int) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(tb, err)
	defer f.Close()
	_, err = f.WriteAt(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, pageSize/4), int64(id)*int64(pageSize))
	must(tb, err)
	must(tb, f.Sync())
}

// damageSandboxPage damages the leaf page of the data bucket that holds key of sandbox,
// which must hold nothing of any other sandbox, and returns its id.
func damageSandboxPage(tb testing.TB, path, sandbox string, key []byte) uint64 {
	tb.Helper()
	leaves, pageSize := bucketLeaves(tb, path, bucketData)
	want, pfx := dataKey(sandbox, key), dataKey(sandbox, nil)
	for _, l := range leaves {
		has := false
		for _, k := range l.keys {
			if !bytes.HasPrefix(k, pfx) {
				has = false
				break
			}
			has = has || bytes.Equal(k, want)
		}
		if has {
			damagePage(tb, path, l.id, pageSize)
			return l.id
		}
	}
	tb.Fatalf("no leaf page holds %q and nothing of other sandboxes", want)
	return 0
}

// bigEvents appends n events of about 2 KiB to sandbox id, so that its records fill
// leaf pages of their own.
func bigEvents(tb testing.TB, n *testNode, id string, count int) {
	tb.Helper()
	data, err := json.Marshal(map[string]string{"pad": strings.Repeat("x", 2000)})
	must(tb, err)
	for range count {
		_, err := n.PostEvent(tctx(tb), id, "agent.pad", data)
		must(tb, err)
	}
}

// lockedBuffer is a log sink safe for the node's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDamagedSandboxIsContained: a damaged page under one sandbox's records neither
// stops the node from opening nor takes other sandboxes down. The check at open finds
// it, logs it and counts it; that sandbox answers ErrCorrupt (an ErrUnavailable) on
// every route, and the others read, write, list and delete as before.
func TestDamagedSandboxIsContained(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	for _, id := range []string{"a1", "b2", "zz-victim"} { // the victim sorts last
		mustCreate(t, n, id)
		bigEvents(t, n, id, 3)
	}
	bigEvents(t, n, "zz-victim", 20)
	closeNode(t, n)
	path := filepath.Join(n.cfg.DataDir, "actors.db")
	page := damageSandboxPage(t, path, "zz-victim", keyMeta)

	logs := &lockedBuffer{}
	cfg := *n.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	n = reopen(t, &cfg, n.clock)

	if got := n.Stats().UnreadableSandboxes; got != 1 {
		t.Errorf("UnreadableSandboxes = %d after open, want 1", got)
	}
	if l := logs.String(); !strings.Contains(l, "zz-victim") || !strings.Contains(l, fmt.Sprint(page)) || !strings.Contains(l, path) {
		t.Errorf("open logged no line naming the sandbox, page %d and file: %s", page, l)
	}

	ctx := tctx(t)
	victim := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := n.GetSandbox(ctx, "zz-victim"); return err }},
		{"get again", func() error { _, err := n.GetSandbox(ctx, "zz-victim"); return err }},
		{"events", func() error { _, err := n.Events(ctx, "zz-victim", 0, 0); return err }},
		{"post event", func() error { _, err := n.PostEvent(ctx, "zz-victim", "agent.x", nil); return err }},
		{"create over it", func() error { _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "zz-victim"}); return err }},
		{"delete", func() error { return n.DeleteSandbox(ctx, "zz-victim") }},
	}
	for _, tc := range victim {
		t.Run("victim "+tc.name, func(t *testing.T) {
			err := tc.call()
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrUnavailable) || !errors.As(err, &ce) || ce.Sandbox != "zz-victim" {
				t.Fatalf("err = %v, want a *CorruptError for zz-victim", err)
			}
		})
	}

	others := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := n.GetSandbox(ctx, "a1"); return err }},
		{"events", func() error {
			evs, err := n.Events(ctx, "b2", 0, 0)
			if err == nil && len(evs) != 4 {
				err = fmt.Errorf("%d events, want 4", len(evs))
			}
			return err
		}},
		{"post event", func() error { _, err := n.PostEvent(ctx, "a1", "agent.x", nil); return err }},
		{"create", func() error { _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "c3"}); return err }},
		{"list", func() error {
			list, err := n.ListSandboxes(ctx, nil)
			var ids []string
			for _, in := range list {
				ids = append(ids, in.ID)
			}
			if err == nil && fmt.Sprint(ids) != "[a1 b2 c3]" {
				err = fmt.Errorf("listed %v, want [a1 b2 c3]", ids)
			}
			return err
		}},
		{"delete", func() error { return n.DeleteSandbox(ctx, "b2") }},
	}
	for _, tc := range others {
		t.Run("other "+tc.name, func(t *testing.T) { must(t, tc.call()) })
	}
	if got := n.Stats().UnreadableSandboxes; got != 1 {
		t.Errorf("UnreadableSandboxes = %d at the end, want 1", got)
	}
}

// TestDamagedPageInGroupCommit: a batch that walks into a damaged page fails alone with
// ErrCorrupt; another sandbox's batch committed in the same transaction is retried
// alone and succeeds, and the damaged sandbox then fails at once.
func TestDamagedPageInGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := tctx(t)
	path := filepath.Join(t.TempDir(), "actors.db")
	s, err := OpenBolt(path)
	must(t, err)
	pad := bytes.Repeat([]byte("x"), 2000)
	for _, id := range []string{"a1", "zz-victim"} {
		b := &Batch{Sandbox: id}
		b.Put(keyMeta, []byte("{}"))
		for i := range 20 {
			b.Put(seqKey(pfxEvent, uint64(i+1)), pad)
		}
		must(t, s.Write(ctx, b))
	}
	must(t, s.Close())
	leaves, pageSize := bucketLeaves(t, path, bucketData)
	s, err = OpenBolt(path)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	// Damaged while open: the store reads the page from its mapping of the file.
	var victimPage uint64
	for _, l := range leaves {
		if bytes.HasPrefix(l.keys[0], []byte("zz-victim\x00")) && bytes.Equal(l.keys[len(l.keys)-1], dataKey("zz-victim", keyMeta)) {
			victimPage = l.id
		}
	}
	if victimPage == 0 {
		t.Fatal("no leaf page of zz-victim's alone holds its meta key")
	}
	file, err := os.ReadFile(path)
	must(t, err)
	good := bytes.Clone(file[int(victimPage)*pageSize : int(victimPage+1)*pageSize])
	damagePage(t, path, victimPage, pageSize)

	// Queue the two batches under one hold of the lock: whichever run of the committer
	// takes them takes both, as one group in one transaction.
	group := []*pendingWrite{
		{b: &Batch{Sandbox: "zz-victim", Ops: []Op{{Key: keyMeta, Value: []byte("v")}}}, ch: make(chan struct{})},
		{b: &Batch{Sandbox: "a1", Ops: []Op{{Key: []byte("second"), Value: []byte("v")}}}, ch: make(chan struct{})},
	}
	s.mu.Lock()
	s.pending = append(s.pending, group...)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	for _, w := range group {
		select {
		case <-w.ch:
		case <-ctx.Done():
			t.Fatal("the group was not committed")
		}
	}
	if !errors.Is(group[0].err, ErrCorrupt) {
		t.Errorf("victim's write: %v, want ErrCorrupt", group[0].err)
	}
	if group[1].err != nil {
		t.Errorf("a1's write in the same group: %v", group[1].err)
	}
	must(t, s.Read(ctx, "a1", func(r Reader) error {
		if string(r.Get([]byte("second"))) != "v" {
			return errors.New("a1's write in the damaged group is lost")
		}
		return nil
	}))
	// Known damaged until reopened: even with the page mended, the store does not walk
	// it again.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(good, int64(victimPage)*int64(pageSize))
	must(t, err)
	must(t, f.Close())
	wantErr(t, s.Read(ctx, "zz-victim", func(Reader) error { return nil }), ErrCorrupt)
	wantErr(t, s.Write(ctx, &Batch{Sandbox: "zz-victim", Ops: []Op{{Key: []byte("k")}}}), ErrCorrupt)
	if d := s.Damaged(); len(d) != 1 || d[0].Sandbox != "zz-victim" || !strings.Contains(d[0].Detail, fmt.Sprint(victimPage)) {
		t.Errorf("Damaged() = %+v, want zz-victim at page %d", d, victimPage)
	}
}

// TestUnopenableStorage: a file whose two meta pages are both damaged cannot be served
// at all; Open fails with ErrCorrupt, naming the file and what to do, and leaves the
// file as it was.
func TestUnopenableStorage(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "a1")
	closeNode(t, n)
	path := filepath.Join(n.cfg.DataDir, "actors.db")
	pageSize := os.Getpagesize()
	damagePage(t, path, 0, pageSize)
	damagePage(t, path, 1, pageSize)
	before, err := os.ReadFile(path)
	must(t, err)

	_, err = Open(context.Background(), n.cfg)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "restore it from a backup") {
		t.Fatalf("Open = %v, want ErrCorrupt naming %s and what to do", err, path)
	}
	after, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Error("Open changed the damaged file")
	}
}
