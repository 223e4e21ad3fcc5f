package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// fsm is the raft state machine: members, the partition table and pins, and the
// sandbox records in db. Readers of the tables take no lock: raft calls Apply,
// Snapshot and Restore on one goroutine, and every change publishes a new immutable
// *state that readers load atomically. The mutex only guards the channel that wakes
// waitIndex. Sandbox records are read in db's read transactions (store_db.go).
type fsm struct {
	cur    atomic.Pointer[state]
	failed atomic.Pointer[error]
	log    *slog.Logger
	db     *stateDB
	ov     *overlay
	// onApply is Config.OnApply.
	onApply func(sandboxes []string)

	changed changeSignal // broadcast at each publish and applied mark

	// observe, when set (tests), is called on raft's FSM goroutine with each state
	// just after it is published; beforeBatches before each cmdBatches entry.
	observe       func(*state)
	beforeBatches func(index uint64)
	// onValues, when set (Config.OnValues), is called on raft's FSM goroutine after
	// the key/value table may have changed: a set-values command or a restore.
	onValues func()
	// leases is the last leader's lease entry applied here (leaderlease.go).
	leases leaseNotes
	// mark is how far this replica has applied the log, for read indexes
	// (readbarrier.go).
	mark appliedMark
}

var _ raft.FSM = (*fsm)(nil)

func newFSM(log *slog.Logger, db *stateDB) *fsm {
	f := &fsm{log: log, db: db, ov: newOverlay(db.applied.Load())}
	db.wb.written = f.written
	f.cur.Store(emptyState())
	return f
}

// Apply applies one committed log entry. Its result is nil or an error (or a
// *groupResult for batches), which the leader's caller receives through the apply
// future. Raft calls ApplyBatch instead (store_apply.go); Apply is the same for one
// entry.
func (f *fsm) Apply(l *raft.Log) any {
	res := f.ApplyBatch([]*raft.Log{l})[0]
	if err := f.db.drain(); err != nil && res != nil {
		if _, ok := res.(error); !ok {
			res = err
		}
	}
	return res
}

// applyOne applies one entry that is not a cmdBatches entry, or any entry once the
// FSM has failed (it answers those with the error).
func (f *fsm) applyOne(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if len(l.Data) > 0 && cmdType(l.Data[0]) == cmdLeaderLease {
		// Noted even on a replica that stopped applying: a stale note would let it,
		// leading, count the last leader's lease from too early.
		f.leases.note(l, mono())
		return nil
	}
	if err := f.err(); err != nil {
		return err
	}
	return f.apply(l.Index, l.Data)
}

func (f *fsm) err() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// apply decodes and applies one command. A command that decodes but is refused
// (stale epoch, unknown member) leaves the state alone on every replica alike, so the
// replicas stay identical. An unknown command without the ignorable bit is different:
// newer replicas apply it and this one cannot, so going on would silently diverge.
// The FSM latches the error instead and refuses everything after it, leaving this
// replica frozen at the last state it understood until the binary is upgraded.
func (f *fsm) apply(index uint64, data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty command at index %d", ErrCorrupt, index)
	}
	t := cmdType(data[0])
	d := decoder{b: data[1:]}
	old := f.cur.Load()
	var next *state
	var err error
	switch t {
	case cmdRegister:
		m := d.member()
		if err = d.done(); err == nil {
			next, err = old.register(m)
		}
	case cmdSetStatus:
		id, st := NodeID(d.string()), Status(d.byte())
		if err = d.done(); err == nil {
			next, err = old.setStatus(id, st)
		}
	case cmdAssign:
		moves := d.moves()
		if err = d.done(); err == nil {
			next, err = old.assign(index, moves)
		}
	case cmdFail:
		id, moves := NodeID(d.string()), d.moves()
		if err = d.done(); err == nil {
			next, err = old.fail(index, id, moves)
		}
	case cmdPin:
		sb, sel, owner, expect := d.string(), d.labels(), NodeID(d.string()), d.uvarint()
		if err = d.done(); err == nil {
			next, err = old.pin(index, sb, sel, owner, expect)
		}
	case cmdUnpin:
		sb, expect := d.string(), d.uvarint()
		if err = d.done(); err == nil {
			next, err = old.unpin(sb, expect)
		}
	case cmdSetValues:
		kv := decodeValues(&d)
		if err = d.done(); err == nil {
			next, err = old.setValues(kv)
		}
	case cmdBeginHandoff:
		hs := d.handoffs()
		if err = d.done(); err == nil {
			next, err = old.beginHandoff(index, hs)
		}
	case cmdCompleteHandoff:
		moves := d.moves()
		if err = d.done(); err == nil {
			next, err = old.completeHandoff(index, moves)
		}
	case cmdAbortHandoff:
		refs := d.epochRefs()
		if err = d.done(); err == nil {
			next, err = old.abortHandoff(index, refs)
		}
	case cmdPinMove:
		op, ops := d.byte(), d.pinOps()
		if err = d.done(); err == nil {
			next, err = old.pinMove(index, op, ops)
		}
	default:
		if t&cmdIgnorable != 0 {
			f.log.Debug("cluster: skipped ignorable command", "type", int(t), "index", index)
			return nil
		}
		err := fmt.Errorf("%w: type %#x at index %d; this replica stops applying until upgraded", ErrUnknownCommand, byte(t), index)
		f.failed.Store(&err)
		f.log.Error("cluster: failed to apply command", "err", err)
		return err
	}
	if err != nil {
		return err
	}
	if next != old {
		next.index = index // next is a fresh copy, not yet published
		f.publish(next)
		if t == cmdSetValues && f.onValues != nil {
			f.onValues()
		}
	}
	return nil
}

// publish makes s the current state and wakes every waitIndex.
func (f *fsm) publish(s *state) {
	f.cur.Store(s)
	f.changed.broadcast()
	if f.observe != nil {
		f.observe(s)
	}
}

// waitIndex waits until the published state is at index i or later, ctx is done or
// the timeout passes, and reports whether it got there.
func (f *fsm) waitIndex(ctx context.Context, i uint64, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f.changed.until(ctx, nil, func() (bool, error) { return f.cur.Load().index >= i, nil }) == nil
}
