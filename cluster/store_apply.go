package cluster

import (
	"github.com/hashicorp/raft"
)

// Applying entries together. Raft hands the FSM every entry it has learnt committed
// at once (up to MaxAppendEntries) through ApplyBatch. A run of consecutive
// cmdBatches entries among them is judged entry by entry, in log order, against the
// tables as each entry leaves them, exactly as one Apply per entry would judge
// them, and queued as one run for the state file's writer (store_writer.go), which
// writes whatever is queued in one transaction that also records the last index.
// A state-file transaction costs about the same page writes whether it holds one
// group or ten (a sandbox's records share a leaf), so the file's cost is per write,
// not per entry.
//
// Any other command ends the run: the run is written (and its tables published)
// before that command is applied, so nothing that is not a batch ever sees the
// file behind the tables. The test hook beforeBatches ends the run too, so a
// replica held before an entry has every entry before it in the file.
//
// Replay: an entry at or below the file's applied index is judged (its verdicts and
// table changes are recomputed, as they depend only on the log) but not written.
// The applied index a transaction records is its last entry's, and the file holds
// every entry up to it, so a replay after a crash at any point writes each entry
// once.

var _ raft.BatchingFSM = (*fsm)(nil)

// ApplyBatch applies entries raft has committed, in order, and returns one result
// per entry, as Apply would. It runs on raft's FSM goroutine.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var r batchRun
	for i, l := range logs {
		if l.Type == raft.LogCommand && len(l.Data) > 0 && isBatches(cmdType(l.Data[0])) && f.err() == nil {
			if f.beforeBatches != nil {
				f.flush(&r, out, true)
				f.beforeBatches(l.Index)
			}
			if err := f.judge(&r, i, l); err != nil {
				out[i] = err
			}
			continue
		}
		f.flush(&r, out, true)
		out[i] = f.applyOne(l)
	}
	f.flush(&r, out, false)
	f.noteApplied(logs)
	return out
}

// batchRun is a run of cmdBatches entries judged but not yet written.
type batchRun struct {
	cur     *state // the tables after the entries judged so far; nil: f.cur
	entries []runEntry
	states  []*state // tables to publish after the write, in order
}

// runEntry is one entry of a run: its position in the ApplyBatch call, index,
// batches and verdicts.
type runEntry struct {
	pos   int
	index uint64
	bs    []*Batch
	vs    []batchVerdict
}

// judge decodes entry l (at position pos of the call) and decides its batches
// against the run's tables, which it advances. An entry that does not decode is
// answered with the error and changes nothing, as in Apply.
func (f *fsm) judge(r *batchRun, pos int, l *raft.Log) error {
	d := decoder{b: l.Data[1:]}
	bs := d.batches()
	if err := d.done(); err != nil {
		return err
	}
	if r.cur == nil {
		r.cur = f.cur.Load()
	}
	old := r.cur
	vs := verdictsFor(old, bs)
	if len(old.pins) > 0 {
		next := old.markWritten(bs, vs)
		if cmdType(l.Data[0]) == cmdBatchesDrop {
			next = next.dropDeleted(old, bs, vs)
		}
		if next != old {
			next.index = l.Index
			r.states = append(r.states, next)
			r.cur = next
		}
	}
	r.entries = append(r.entries, runEntry{pos: pos, index: l.Index, bs: bs, vs: vs})
	return nil
}

// flush queues the run for the state file's writer (store_writer.go) and answers
// its entries. With wait, or when the run changes the tables, it first waits until
// the writer has written the run (and all before it), then publishes the tables:
// no table is ever ahead of the file. If a write failed (the writer latches the
// FSM, see written), every entry of the run is answered with the error, and its
// tables are not published. The run is empty afterwards.
func (f *fsm) flush(r *batchRun, out []any, wait bool) {
	defer r.reset()
	var err error
	if len(r.entries) > 0 {
		err = f.db.queueRun(r.entries)
	}
	if err == nil && (wait || len(r.states) > 0) {
		err = f.db.drain()
	}
	if err != nil {
		for _, e := range r.entries {
			out[e.pos] = err
		}
		return
	}
	for _, s := range r.states {
		f.publish(s)
	}
	for _, e := range r.entries {
		out[e.pos] = &groupResult{verdicts: e.vs}
	}
}

// written is called on the state file's writer goroutine after each write, with
// the sandboxes it changed, or the error that stops this replica: the file cannot
// take the entries (disk full, I/O error), and going on would leave it without
// records the others have, so the FSM refuses every later entry, like an unknown
// command makes it do.
func (f *fsm) written(changed []string, err error) {
	if err != nil {
		f.failed.Store(&err)
		f.log.Error("cluster: failed to apply batches", "err", err)
		return
	}
	f.ov.prune(f.db.applied.Load())
	if len(changed) > 0 && f.onApply != nil {
		f.onApply(dedup(changed))
	}
}

// reset empties the run, keeping its slices' room for the next.
func (r *batchRun) reset() {
	clear(r.entries)
	clear(r.states)
	*r = batchRun{entries: r.entries[:0], states: r.states[:0]}
}
