package cluster

import (
	"context"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// ReadBarrier waits, as CatchUp does, until this replica has applied every entry
// committed when it was called, by this leader or an earlier one, but without
// writing to the log when it can: it asks the leader for a read index (its commit
// index, vouched for by a quorum after the call; readindex.go) and waits until this
// replica's tables and records have reached it. When the leader cannot vouch for
// one (a new leader that has not yet committed an entry of its own term, no leader
// known, a leader that cannot be reached or predates read indexes) it falls back
// to CatchUp's empty write, and reports wrote true. The rule is explained in
// docs/design.md ("Catching up without a write").
//
// It returns ctx's error if ctx ends first, ErrClosed once the node closes, or
// the error that stopped this replica applying the log.
//
// Safe for concurrent use; each call asks the leader on its own (callers that
// expect many at once share calls: see the gateway's unknown-sandbox check).
func (n *Node) ReadBarrier(ctx context.Context) (wrote bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if n.closed.Load() {
		return false, ErrClosed
	}
	i, ok := n.readIndex(ctx)
	if !ok {
		return true, n.sync(ctx)
	}
	return false, n.fsm.waitRead(ctx, n.ctx.Done(), i)
}

// appliedMark is what a replica has applied of the log, kept by the FSM for read
// indexes: raft's own AppliedIndex counts entries it has handed to the FSM, not
// entries the FSM has applied.
type appliedMark struct {
	// seen is the index of the last entry raft handed to ApplyBatch, set once the
	// FSM has published the tables it leaves. Below a restored snapshot it stays
	// where it was until the next entry: a waiter then waits longer, never less.
	seen atomic.Uint64
	// batches is the index of the last cmdBatches entry queued for the state file
	// by then (written once stateDB.applied reaches it).
	batches atomic.Uint64
}

// noteApplied records the entries of one ApplyBatch call, after they are applied,
// and wakes every waiter. It runs on raft's FSM goroutine.
func (f *fsm) noteApplied(logs []*raft.Log) {
	if len(logs) == 0 {
		return
	}
	if f.err() == nil {
		for i := len(logs) - 1; i >= 0; i-- {
			if l := logs[i]; l.Type == raft.LogCommand && len(l.Data) > 0 && isBatches(cmdType(l.Data[0])) {
				f.mark.batches.Store(l.Index)
				break
			}
		}
	}
	f.mark.seen.Store(logs[len(logs)-1].Index) // after batches: a waiter reads seen first
	f.changed.broadcast()
}

// waitRead waits until this replica has applied the entry at index i and every one
// before it: the tables have reached it and the state file holds every batch up to
// it. It gives up when ctx ends or done is closed (the node closing).
func (f *fsm) waitRead(ctx context.Context, done <-chan struct{}, i uint64) error {
	err := f.changed.until(ctx, done, func() (bool, error) {
		if err := f.err(); err != nil {
			return false, err
		}
		return f.mark.seen.Load() >= i, nil
	})
	if err != nil {
		return err
	}
	return f.db.waitApplied(ctx, done, f.mark.batches.Load())
}
