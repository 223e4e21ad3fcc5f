package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Batch is one atomic write to one sandbox's records, replicated through raft.
type Batch struct {
	// Sandbox is the sandbox whose records the batch changes: not empty, no NUL.
	Sandbox string
	// Epoch is the owner epoch the writer was admitted with (Node.Epoch). The batch
	// is applied only if it is the current epoch of the sandbox's partition, or of
	// its pin, when the batch's raft entry is applied; otherwise it is ErrFenced.
	Epoch uint64
	// DeleteSandbox removes every record of Sandbox before Ops are applied.
	DeleteSandbox bool
	// Ops are applied in order. Anything time-dependent in a value (a deadline) is
	// stamped by the writer: replicas apply the same bytes whenever they apply them.
	Ops []Op
}

// Op is one put or delete in a Batch.
type Op struct {
	// Key is the record's key within the sandbox; any bytes.
	Key []byte
	// Value is the record's value, ignored when Delete. A nil Value is stored as
	// an empty one.
	Value []byte
	// Delete removes Key instead of putting Value.
	Delete bool
}

func (b *Batch) empty() bool { return !b.DeleteSandbox && len(b.Ops) == 0 }

// clone copies b into one allocation for keys and values, so the caller may reuse
// its slices once Write returns while the overlay keeps the batch.
func (b *Batch) clone() *Batch {
	size := 0
	for _, op := range b.Ops {
		size += len(op.Key) + len(op.Value)
	}
	buf := make([]byte, 0, size)
	c := &Batch{Sandbox: b.Sandbox, Epoch: b.Epoch, DeleteSandbox: b.DeleteSandbox, Ops: make([]Op, len(b.Ops))}
	for i, op := range b.Ops {
		buf = append(buf, op.Key...)
		c.Ops[i].Key = buf[len(buf)-len(op.Key) : len(buf) : len(buf)]
		c.Ops[i].Delete = op.Delete
		if !op.Delete {
			buf = append(buf, op.Value...)
			c.Ops[i].Value = buf[len(buf)-len(op.Value) : len(buf) : len(buf)]
			if op.Value == nil {
				c.Ops[i].Value = nil
			}
		}
	}
	return c
}

// Write applies b atomically on every replica, or not at all, and returns once the
// leader has committed and applied it: nil, an error matching ErrFenced (the epoch
// is not current), ErrInvalid (a bad sandbox id), ErrClosed, a *NotLeaderError when
// no leader took the batch within a few seconds (nothing was applied; retry later),
// or an error matching ErrIndeterminate when the outcome is unknown (with ctx's
// error too when ctx ended first). After an unknown outcome the next Read of the
// sandbox on this node first catches up with the leader, so it shows whether the
// batch was applied.
//
// Concurrent Writes on a node share raft entries (group commit): while groups are in
// flight, new batches queue and go together into the next entry, each with its own
// verdict. A node that is not the leader sends its groups to the leader over the
// cluster's TCP listener. Once Write returns nil, Read on this node sees the batch.
//
// Safe for concurrent use.
func (n *Node) Write(ctx context.Context, b *Batch) error {
	if b == nil || b.empty() {
		return nil
	}
	if err := validBatch(b); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &pendingWrite{b: b.clone(), done: make(chan struct{})}
	if !n.commits.enqueue(w) {
		return ErrClosed
	}
	select {
	case <-w.done:
		if isIndeterminate(w.err) {
			n.fsm.ov.markUncertain(b.Sandbox, nil)
		}
		return w.err
	case <-ctx.Done():
		n.fsm.ov.markUncertain(b.Sandbox, w.done)
		return fmt.Errorf("%w: %w", ErrIndeterminate, ctx.Err())
	}
}

// Read runs fn with a consistent view of one sandbox's records on this node's
// replica, with this node's acknowledged writes that its replica has not applied
// yet on top: an owner reads its own writes at once and never waits for its replica
// on this path. A sandbox owned elsewhere reads as this replica has it, which may
// be a little behind. After a Write of the sandbox with an unknown outcome, Read
// first waits until this replica has applied an entry the current leader committed.
//
// Safe for concurrent use; fn must not call Write and wait for it.
func (n *Node) Read(ctx context.Context, sandbox string, fn func(r Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.closed.Load() {
		return ErrClosed
	}
	if u := n.fsm.ov.uncertainty(sandbox); u.gen != 0 {
		if err := n.settle(ctx, u); err != nil {
			return fmt.Errorf("failed to settle an unknown write outcome: %w", err)
		}
		n.fsm.ov.settled(sandbox, u.gen)
	}
	pending := n.fsm.ov.get(sandbox)
	return n.fsm.db.view(func(tx *bolt.Tx) error {
		r := &mergedReader{c: tx.Bucket(bucketData).Cursor(), pfx: dataKey(sandbox, nil)}
		r.d = deltaOf(pending, readApplied(tx))
		return fn(r)
	})
}

// Sandboxes calls fn for every sandbox with records on this node's replica (every
// node's sandboxes, not only this one's), in id order, with the value stored under
// key (nil if none or key is nil), this node's pending writes included as in Read
// (but writes with an unknown outcome are not settled first). The value is valid
// only during fn. An error from fn ends the walk and is returned.
//
// Safe for concurrent use.
func (n *Node) Sandboxes(ctx context.Context, key []byte, fn func(id string, val []byte) error) error {
	return n.SandboxesAfter(ctx, key, "", fn)
}

// SandboxesAfter is Sandboxes from the first id after after ("": from the first), so
// that a long walk can be taken in pages, each in a read of its own, rather than hold
// one read of the replica open for as long as its caller takes.
//
// Safe for concurrent use.
func (n *Node) SandboxesAfter(ctx context.Context, key []byte, after string, fn func(id string, val []byte) error) error {
	if n.closed.Load() {
		return ErrClosed
	}
	pending := n.fsm.ov.all()
	return n.fsm.db.view(func(tx *bolt.Tx) error {
		applied := readApplied(tx)
		deltas := make(map[string]*delta, len(pending))
		extra := make([]string, 0, len(pending))
		for id, es := range pending {
			if id <= after {
				continue
			}
			if d := deltaOf(es, applied); d != nil {
				deltas[id] = d
				extra = append(extra, id)
			}
		}
		sort.Strings(extra)
		data := tx.Bucket(bucketData).Cursor()
		ids := tx.Bucket(bucketIndex).Cursor()
		visit := func(id string, inFile bool) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d := deltas[id]
			if !(inFile && (d == nil || !d.cleared)) && !(d != nil && d.puts) {
				return nil // deleted by a pending batch, or only deletes pending
			}
			var v []byte
			if key != nil {
				r := mergedReader{c: data, pfx: dataKey(id, nil), d: d}
				v = r.Get(key)
			}
			return fn(id, v)
		}
		k, _ := ids.First()
		if after != "" {
			if k, _ = ids.Seek([]byte(after)); string(k) == after {
				k, _ = ids.Next()
			}
		}
		for k != nil || len(extra) > 0 {
			var err error
			switch {
			case len(extra) > 0 && (k == nil || extra[0] < string(k)):
				err = visit(extra[0], false)
				extra = extra[1:]
			default:
				id := string(k)
				if len(extra) > 0 && extra[0] == id {
					extra = extra[1:]
				}
				err = visit(id, true)
				k, _ = ids.Next()
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// settle waits until the writes of u have left the committer (committed, refused
// or sent to a leader), then syncs: a write that reached an earlier leader is then
// either in this replica or lost for good, since the current leader's entry
// commits after every entry of earlier terms that will ever commit.
func (n *Node) settle(ctx context.Context, u uncertainty) error {
	for _, done := range u.dones {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return n.sync(ctx)
}

// CatchUp waits until this replica has applied every entry committed when it was
// called, by this leader or an earlier one (through an empty write that the
// leader commits): the table then shows at least what any node had seen. It is
// for decisions that must not act on a lagging table, such as removing what the
// table says belongs elsewhere.
func (n *Node) CatchUp(ctx context.Context) error { return n.sync(ctx) }

// sync commits an empty group through the leader and waits until this replica has
// applied it: every entry committed before, by this leader or an earlier one, is
// then in the replica. An empty group is harmless twice, so an unknown outcome
// (a leader lost meanwhile) is retried within writeHold.
func (n *Node) sync(ctx context.Context) error {
	hold := time.Now().Add(writeHold)
	for {
		res, err := n.commit(ctx, encodeBatches(nil))
		if err == nil {
			return n.fsm.db.waitApplied(ctx, n.ctx.Done(), res.index)
		}
		if !isIndeterminate(err) || time.Now().After(hold) {
			return err
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return err
		case <-n.ctx.Done():
			return ErrClosed
		}
	}
}
