package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// batchLog returns n cmdBatches entries from index first on, each putting key k<i>
// of sandbox sb at its current epoch in f.
func batchLog(f *fsm, sb string, first uint64, n int) []*raft.Log {
	_, epoch, _ := f.cur.Load().owner(sb)
	out := make([]*raft.Log, n)
	for i := range out {
		b := put(sb, fmt.Sprintf("k%d", i), "v")
		b.Epoch = epoch
		out[i] = &raft.Log{Index: first + uint64(i), Type: raft.LogCommand, Data: encodeBatches([]*Batch{b})}
	}
	return out
}

// TestWriteBehindTakesEverythingQueued holds the writer in a write, queues more
// runs meanwhile, and checks that its next write takes them all, and that Snapshot
// and drain see every answered entry in the file.
func TestWriteBehindTakesEverythingQueued(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	log := batchLog(f, "sb-writer", 100, 11)
	w0 := f.db.wb.writes.Load()

	f.db.mu.Lock() // the writer's next transaction waits for this
	f.ApplyBatch(log[:1])
	f.db.urgeWrite()
	waitFor(t, "the writer to take the first run", func() bool {
		f.db.wb.mu.Lock()
		defer f.db.wb.mu.Unlock()
		return len(f.db.wb.queue) == 0
	})
	for _, l := range log[1:] {
		if r, ok := f.ApplyBatch([]*raft.Log{l})[0].(*groupResult); !ok || r.verdicts[0].code != batchApplied {
			t.Fatalf("entry %d: %v", l.Index, r)
		}
	}
	if got := f.db.applied.Load(); got >= log[0].Index {
		t.Fatalf("file at %d while its writer is held", got)
	}
	f.db.mu.Unlock()

	snap, err := f.Snapshot() // drains first
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if got := readApplied(snap.(*snapshot).tx); got != 110 {
		t.Fatalf("snapshot of the file at %d, want 110", got)
	}
	if got := f.db.wb.writes.Load() - w0; got != 2 {
		t.Fatalf("%d writes for 11 runs, want 2: one held, then the ten queued behind it", got)
	}
	if d := dump(t, f); !strings.Contains(d, "k10") {
		t.Fatalf("file lacks the last run:\n%s", d)
	}
}

// TestWriteBehindFailureStopsReplica makes the writer's transaction fail (a key
// bbolt refuses) and checks that the FSM stops: every later entry is refused, a
// run queued behind the failed one is not written, and the file keeps the index of
// the last good write.
func TestWriteBehindFailureStopsReplica(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	log := append(batchLog(f, "sb-writer", 100, 1), batchLog(f, "sb-writer", 102, 2)...)
	if r := f.Apply(log[0]); !isGroup(r) {
		t.Fatalf("first entry: %v", r)
	}
	_, epoch, _ := f.cur.Load().owner("sb-writer")
	bad := put("sb-writer", strings.Repeat("k", bolt.MaxKeySize), "v")
	bad.Epoch = epoch
	res := f.ApplyBatch([]*raft.Log{
		{Index: 101, Type: raft.LogCommand, Data: encodeBatches([]*Batch{bad})},
		log[1], // index 102, queued with it: the same write
	})
	if err := f.db.drain(); !errors.Is(err, bolterrors.ErrKeyTooLarge) {
		t.Fatalf("drain: %v", err)
	}
	if !isGroup(res[0]) {
		t.Fatalf("the failing entry was answered before its write: got %v", res[0])
	}
	if !errors.Is(f.err(), bolterrors.ErrKeyTooLarge) {
		t.Fatalf("FSM not stopped: %v", f.err())
	}
	if r := f.Apply(log[2]); !errors.Is(r.(error), bolterrors.ErrKeyTooLarge) {
		t.Fatalf("entry after the failure: %v", r)
	}
	if got := f.db.applied.Load(); got != 100 {
		t.Fatalf("file at %d, want 100", got)
	}
	if _, err := f.Snapshot(); err == nil {
		t.Fatal("snapshot of a stopped replica")
	}
}

func isGroup(r any) bool { _, ok := r.(*groupResult); return ok }

// TestWriteBehindHammer applies entries one call at a time on one goroutine (raft's
// FSM goroutine), with a drain now and then, while readers wait for indexes and
// check that the file holds every entry up to the index it reports.
func TestWriteBehindHammer(t *testing.T) {
	t.Parallel()
	const entries, readers = 300, 4
	f := placedFSM(t, 3)
	log := batchLog(f, "sb-hammer", 1000, entries)
	ctx := context.Background()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for i := r; i < entries; i += readers {
				want := log[i].Index
				if err := f.db.waitApplied(ctx, done, want); err != nil {
					t.Error(err)
					return
				}
				err := f.db.view(func(tx *bolt.Tx) error {
					applied := readApplied(tx)
					if applied < want {
						return fmt.Errorf("file at %d after waiting for %d", applied, want)
					}
					if tx.Bucket(bucketData).Get(dataKey("sb-hammer", fmt.Appendf(nil, "k%d", applied-1000))) == nil {
						return fmt.Errorf("file at %d lacks that entry's record", applied)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i, l := range log {
		f.ApplyBatch([]*raft.Log{l})
		if i%50 == 49 {
			if err := f.db.drain(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	close(done)
}
