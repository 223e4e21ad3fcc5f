package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// pinnedCluster starts 3 nodes labelled pool=x, and returns them with pin and write
// helpers: pin pins a sandbox to the pool through the leader; write writes b under
// the assignment a on a's owner, once the owner has applied the pin.
func pinnedCluster(t *testing.T, ctx context.Context, grace time.Duration) (nodes []*Node, pin func(string) Assignment, write func(Assignment, *Batch) error) {
	t.Helper()
	nodes = clusterWith(t, 3, func(_ int, cfg *Config) {
		cfg.Labels = map[string]string{"pool": "x"}
		cfg.OrphanPinGrace = grace
	})
	pin = func(sb string) Assignment {
		t.Helper()
		var a Assignment
		if err := onLeader(t, nodes, func(l *Node) (err error) { a, err = l.Pin(ctx, sb, map[string]string{"pool": "x"}); return err }); err != nil {
			t.Fatal(err)
		}
		return a
	}
	write = func(a Assignment, b *Batch) error {
		owner := byID(nodes, a.Owner)
		owner.fsm.waitIndex(ctx, a.Epoch, patience)
		b.Epoch = a.Epoch
		return writeSettled(ctx, owner, b)
	}
	return nodes, pin, write
}

// writeSettled writes b on nd as a caller that may retry does: a write whose outcome
// is unknown (leadership lost while committing, on a loaded machine) is sent again
// until one has a known outcome or ctx ends. Only for batches safe to apply twice.
// When an earlier try was unknown, an ErrFenced answer may be the earlier try's own
// doing (a delete that landed drops the pin that admitted the retry): it comes back
// wrapped in errSettledFenced so the caller can check the outcome in the tables.
func writeSettled(ctx context.Context, nd *Node, b *Batch) error {
	unknown := false
	for {
		err := nd.Write(ctx, b)
		switch {
		case errors.Is(err, ErrIndeterminate) && ctx.Err() == nil:
			unknown = true
			continue
		case unknown && errors.Is(err, ErrFenced):
			return fmt.Errorf("%w: %w", errSettledFenced, err)
		}
		return err
	}
}

// errSettledFenced marks an ErrFenced answer to a retry of a write whose first
// outcome was unknown (writeSettled).
var errSettledFenced = errors.New("fenced after an unknown outcome")

func putRecord(sb string) *Batch {
	return &Batch{Sandbox: sb, Ops: []Op{{Key: []byte("k"), Value: []byte("v")}}}
}

// waitPinGone waits until no node holds a pin of sb.
func waitPinGone(t *testing.T, nodes []*Node, sb string) {
	t.Helper()
	waitFor(t, "the pin of "+sb+" gone on every node", func() bool {
		for _, nd := range nodes {
			if _, ok := nd.fsm.cur.Load().pins[sb]; ok {
				return false
			}
		}
		return true
	})
}

// TestDeleteDropsPin: the batch that deletes a pinned sandbox drops its pin on every
// node, and a snapshot taken after has none; a delete stamped with an older epoch of
// the pin is fenced and drops nothing; the id can be pinned afresh afterwards.
func TestDeleteDropsPin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	nodes, pin, write := pinnedCluster(t, ctx, time.Hour)
	for _, nd := range nodes {
		nd.sweepOff.Store(true) // only the delete may drop the pin
	}

	a := pin("gone")
	if err := write(a, putRecord("gone")); err != nil {
		t.Fatal(err)
	}
	stale := pin("stale")
	if err := write(stale, putRecord("stale")); err != nil {
		t.Fatal(err)
	}
	// A retry of a delete that landed meets no pin: fenced, and the pin must be gone.
	if err := write(a, &Batch{Sandbox: "gone", DeleteSandbox: true}); err != nil && !errors.Is(err, errSettledFenced) {
		t.Fatal(err)
	}
	waitPinGone(t, nodes, "gone")

	// Re-pinned at a new epoch (same owner): a delete at the old one is fenced, the
	// pin stays.
	// Leadership lost while committing comes back as ErrNotLeader with the outcome
	// unknown: a retry of a re-pin that landed is then refused as stale, and the
	// epoch check below tells.
	var err error
	lost := false
	waitFor(t, "a re-pin at a new epoch", func() bool {
		err = leader(t, nodes...).apply(ctx, encodePin("stale", map[string]string{"pool": "x"}, stale.Owner, stale.Epoch))
		lost = lost || errors.Is(err, ErrNotLeader)
		return !errors.Is(err, ErrNotLeader)
	})
	if err != nil && !(lost && errors.Is(err, ErrStaleEpoch)) {
		t.Fatal(err)
	}
	cur := leader(t, nodes...).fsm.cur.Load().pins["stale"].Assignment
	if cur.Epoch == stale.Epoch {
		t.Fatalf("re-pin kept epoch %d", cur.Epoch)
	}
	if err := write(stale, &Batch{Sandbox: "stale", DeleteSandbox: true}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a delete at a stale epoch: %v, want fenced", err)
	}
	byID(nodes, cur.Owner).fsm.waitIndex(ctx, cur.Epoch, patience)
	for _, nd := range nodes {
		if !waitApplied(ctx, nd, byID(nodes, cur.Owner).fsm.cur.Load().index) {
			t.Fatalf("%s did not catch up", nd.ID())
		}
		if p, ok := nd.fsm.cur.Load().pins["stale"]; !ok || p.Epoch != cur.Epoch {
			t.Fatalf("%s: pin of stale %+v after a fenced delete, want epoch %d", nd.ID(), p, cur.Epoch)
		}
	}

	for _, nd := range nodes {
		g := roundTripLive(t, nd.fsm)
		if _, ok := g.cur.Load().pins["gone"]; ok {
			t.Fatalf("%s: a restored snapshot still pins a deleted sandbox", nd.ID())
		}
		if _, ok := g.cur.Load().pins["stale"]; !ok {
			t.Fatalf("%s: a restored snapshot lost a live pin", nd.ID())
		}
	}

	// The id is placed afresh: a new pin from nothing, not written.
	again := pin("gone")
	if again.Epoch <= a.Epoch {
		t.Fatalf("re-pin of a deleted sandbox at epoch %d, not past %d", again.Epoch, a.Epoch)
	}
	if p := leader(t, nodes...).fsm.cur.Load().pins["gone"]; p.Written {
		t.Fatalf("the re-created sandbox's pin %+v counts as written", p)
	}
}

// roundTripLive is roundTrip for a replica that goes on applying the log (a leader's
// lease entries, and on a loaded machine the moves of a leadership change): the
// restored copy is compared with the tables the snapshot was taken of, a snapshot
// taken while no entry was applied, rather than with whatever f holds afterwards.
func roundTripLive(t *testing.T, f *fsm) *fsm {
	t.Helper()
	var (
		s *state
		b []byte
	)
	waitFor(t, "a snapshot taken between two applied entries", func() bool {
		s = f.cur.Load()
		b = snapshotBytes(t, f)
		return f.cur.Load() == s
	})
	g := testFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.encode(), g.cur.Load().encode()) {
		t.Fatal("restored state encodes differently")
	}
	return g
}

// waitApplied waits until nd's tables are at index i or later.
func waitApplied(ctx context.Context, nd *Node, i uint64) bool {
	return nd.fsm.waitIndex(ctx, i, patience)
}

// TestSweepDropsPinWithoutRecords: a written pin whose records went without the
// delete that drops it (here a batch that empties the sandbox key by key) is
// dropped by the leader's sweep past the grace, while a pin with records stays.
func TestSweepDropsPinWithoutRecords(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	nodes, pin, write := pinnedCluster(t, ctx, 300*time.Millisecond)
	kept := pin("kept")
	if err := write(kept, putRecord("kept")); err != nil {
		t.Fatal(err)
	}
	a := pin("emptied")
	if err := write(a, putRecord("emptied")); err != nil {
		t.Fatal(err)
	}
	emptied := &Batch{Sandbox: "emptied", DeleteSandbox: true, Ops: []Op{{Key: []byte("k"), Delete: true}}}
	if err := write(a, emptied); err != nil {
		t.Fatal(err)
	}
	waitPinGone(t, nodes, "emptied")
	for _, nd := range nodes {
		if p, ok := nd.fsm.cur.Load().pins["kept"]; !ok || !p.Written {
			t.Fatalf("%s: the pin with a record %+v, want kept and written", nd.ID(), p)
		}
	}
}

// TestPinUnmarkThenWrite: the sweep's unmark removes nothing by itself, and a
// record written after it makes a later drop of the pin refused, on the tables
// alone; an unmark at a stale epoch is refused.
func TestPinUnmarkThenWrite(t *testing.T) {
	s := emptyState()
	s.members["a"] = Member{ID: "a", Status: StatusAlive}
	s, err := s.pin(5, "sb", nil, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	put := []*Batch{{Sandbox: "sb", Epoch: 5, Ops: []Op{{Key: []byte("k")}}}}
	ok := []batchVerdict{{code: batchApplied}}
	s = s.markWritten(put, ok)
	if _, err := s.pinMove(6, pinOpUnmark, []pinOp{{Sandbox: "sb", Expect: 4}}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("unmark at a stale epoch: %v", err)
	}
	if _, err := s.pinMove(6, pinOpDrop, []pinOp{{Sandbox: "sb", Expect: 5}}); !errors.Is(err, ErrPinInUse) {
		t.Fatalf("drop of a written pin: %v", err)
	}
	u, err := s.pinMove(6, pinOpUnmark, []pinOp{{Sandbox: "sb", Expect: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := u.pins["sb"]; !ok || p.Written || p.Epoch != 5 {
		t.Fatalf("unmarked pin %+v, want kept at epoch 5, not written", p)
	}
	w := u.markWritten(put, ok)
	if _, err := w.pinMove(7, pinOpDrop, []pinOp{{Sandbox: "sb", Expect: 5}}); !errors.Is(err, ErrPinInUse) {
		t.Fatalf("drop after a write that followed the unmark: %v", err)
	}
}

// BenchmarkPinnedApply applies one-batch groups to a table of 10k pins: a write
// under a written pin (the common case), the first write under a pin (a create,
// which marks it written), and a delete (which drops it). The last two copy the pin
// table once each.
func BenchmarkPinnedApply(b *testing.B) {
	const pins = 10000
	for _, tt := range []struct {
		name    string
		written bool
		batch   func(sb string) *Batch
	}{
		{"write", true, func(sb string) *Batch { return put(sb, "k", "v") }},
		{"first write", false, func(sb string) *Batch { return put(sb, "k", "v") }},
		{"delete", true, func(sb string) *Batch { return &Batch{Sandbox: sb, DeleteSandbox: true} }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			f := testFSM(b)
			s := emptyState()
			s.members["a"] = Member{ID: "a", Status: StatusAlive}
			for i := 0; i < pins+b.N; i++ {
				s.pins[fmt.Sprintf("sb%d", i)] = pin{Assignment: Assignment{Owner: "a", Epoch: 1, State: PartitionActive}, Written: tt.written}
			}
			f.publish(s)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bt := tt.batch(fmt.Sprintf("sb%d", i))
				bt.Epoch = 1
				f.Apply(&raft.Log{Index: uint64(i + 2), Type: raft.LogCommand, Data: encodeBatches([]*Batch{bt})})
			}
		})
	}
}
