package cluster

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// FuzzWALRecover opens a WAL whose only segment holds the fuzzed bytes: the open
// never panics, and when it succeeds every entry it serves is a record whose CRC,
// checked here apart from the package's code, holds.
func FuzzWALRecover(f *testing.F) {
	var seg []byte
	for _, l := range entries(1, 12) {
		seg = appendRecord(seg, l)
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-5])
	f.Add(append(append([]byte(nil), seg...), make([]byte, 64)...))
	f.Add(append(append([]byte(nil), seg[:40]...), seg[60:]...))
	f.Add([]byte{})
	f.Add(make([]byte, recordHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, segmentName(1))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := openWAL(dir, slog.New(slog.DiscardHandler), 0)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open failed with no corruption reported: %v", err)
			}
			return
		}
		defer w.Close()
		kept, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			kept = nil
		} else if err != nil {
			t.Fatal(err)
		}
		first, _ := w.FirstIndex()
		last, _ := w.LastIndex()
		off := 0
		for i := first; i <= last && last > 0; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil {
				t.Fatalf("GetLog(%d) of a recovered log: %v", i, err)
			}
			if len(kept)-off < recordHeader {
				t.Fatalf("entry %d served past the file", i)
			}
			n := int(binary.LittleEndian.Uint32(kept[off:]))
			rec := kept[off : off+recordHeader+n]
			if crc32c(append(append([]byte(nil), rec[:4]...), rec[recordHeader:]...)) != binary.LittleEndian.Uint32(rec[4:]) {
				t.Fatalf("entry %d served from a record whose CRC fails", i)
			}
			off += len(rec)
		}
		if off != len(kept) {
			t.Fatalf("%d bytes kept after the last entry served", len(kept)-off)
		}
	})
}

// TestWALHammer appends, deletes heads and tails and reads from many goroutines at
// once: every read that succeeds returns the entry of its index.
func TestWALHammer(t *testing.T) {
	t.Parallel()
	w := openTestWAL(t, t.TempDir(), 4096)
	storeBatches(t, w, 1, 50, 10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var l raft.Log
			for {
				select {
				case <-stop:
					return
				default:
				}
				first, _ := w.FirstIndex()
				last, _ := w.LastIndex()
				if last < first || last == 0 {
					continue
				}
				i := first + rand.Uint64N(last-first+1)
				err := w.GetLog(i, &l)
				if errors.Is(err, raft.ErrLogNotFound) {
					continue // deleted since
				}
				if err != nil {
					t.Error(err)
					return
				}
				if want := entry(i); l.Index != i || l.Term != want.Term || len(l.Data) != len(want.Data) {
					t.Errorf("GetLog(%d) returned entry %d", i, l.Index)
					return
				}
			}
		})
	}
	next := uint64(51)
	for round := range 300 {
		n := uint64(1 + round%7)
		if err := w.StoreLogs(entries(next, next+n-1)); err != nil {
			t.Fatal(err)
		}
		next += n
		switch round % 10 {
		case 3: // a snapshot's compaction
			first, _ := w.FirstIndex()
			if err := w.DeleteRange(first, next-40); err != nil {
				t.Fatal(err)
			}
		case 7: // a conflict on a follower
			if err := w.DeleteRange(next-3, next-1); err != nil {
				t.Fatal(err)
			}
			next -= 3
		}
	}
	close(stop)
	wg.Wait()
	first, _ := w.FirstIndex()
	checkLog(t, w, first, next-1)
}
