package cluster

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// TestHandoffWriteEpochs: while a partition is in handoff the store accepts its
// sandboxes' batches stamped with the epoch before the handoff (the old owner's
// activations passivating) or with the handoff's own epoch, and nothing else; once
// the handoff completes or is aborted, only the new epoch passes.
func TestHandoffWriteEpochs(t *testing.T) {
	t.Parallel()
	const begunAt, endAt = 100, 101
	tests := []struct {
		name   string
		end    func(p int) []byte // nil: the handoff is still under way
		accept map[string]bool    // stamped epoch (by name) → accepted
	}{
		{name: "in handoff", accept: map[string]bool{"older": false, "before": true, "handoff": true, "after": false}},
		{name: "completed", end: func(p int) []byte {
			return encodeCompleteHandoff([]move{{P: p, Owner: "node-01", Expect: begunAt}})
		}, accept: map[string]bool{"older": false, "before": false, "handoff": false, "after": true}},
		{name: "aborted", end: func(p int) []byte {
			return encodeAbortHandoff([]epochRef{{P: p, Expect: begunAt}})
		}, accept: map[string]bool{"older": false, "before": false, "handoff": false, "after": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, p, epoch := handoffFSM(t)
			sb := sandboxIn(t, p)
			if got := verdictsFor(f.cur.Load(), []*Batch{{Sandbox: sb, Epoch: epoch}}); got[0].code != batchApplied {
				t.Fatalf("active at its own epoch: verdict %+v", got[0])
			}
			b := encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: epoch}})
			if r := f.Apply(&raft.Log{Index: begunAt, Type: raft.LogCommand, Data: b}); r != nil {
				t.Fatal(r)
			}
			if tt.end != nil {
				if r := f.Apply(&raft.Log{Index: endAt, Type: raft.LogCommand, Data: tt.end(p)}); r != nil {
					t.Fatal(r)
				}
			}
			stamps := map[string]uint64{"older": epoch - 1, "before": epoch, "handoff": begunAt, "after": endAt}
			for name, want := range tt.accept {
				got := verdictsFor(f.cur.Load(), []*Batch{{Sandbox: sb, Epoch: stamps[name]}})[0]
				if (got.code == batchApplied) != want {
					t.Errorf("batch stamped %s (%d): verdict %+v, accepted want %v", name, stamps[name], got, want)
				}
			}
		})
	}
}

// sandboxIn returns a sandbox id of partition p.
func sandboxIn(tb testing.TB, p int) string {
	tb.Helper()
	for i := 0; i < 1<<20; i++ {
		if id := fmt.Sprintf("sb-%d", i); PartitionOf(id) == p {
			return id
		}
	}
	tb.Fatalf("no sandbox id of partition %d", p)
	return ""
}
