package cluster

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// Waiting for the table: a node that learns of a newer table than its own (a 421 from
// an owner naming the owner's table index, or a forwarded request stamped with an
// epoch this replica has not applied) waits for its replica to catch up instead of
// polling. Epochs are raft indexes of the entries that made them, so "the table at
// epoch e" and "the table at index e" are the same wait.

// TableIndex returns the raft index of the entry that made this node's current table
// (0 before the first): the index a node names when it tells another that its table
// is behind. Entries that change nothing leave it alone, so every replica that has
// applied the same log reports the same TableIndex. No lock, no allocation.
func (n *Node) TableIndex() uint64 { return n.fsm.cur.Load().index }

// TableChanged returns a channel that is closed when this node next publishes a new
// table (members, partitions or pins changed). Take the channel before reading the
// table, so that a change between the read and the wait is not missed. After Close
// nothing is published: select on the caller's own lifetime as well.
func (n *Node) TableChanged() <-chan struct{} {
	return n.fsm.changed.next()
}

// WaitApplied waits until this node's table is at index or later (TableIndex >=
// index): every ownership change up to that entry is then visible to Owner and
// Admit. It returns nil then, ctx's error (wrapped) when ctx ends first, and
// ErrClosed once the node is closed. Bound it with ctx: an index that this replica
// never reaches (named by a buggy or hostile peer) waits for ctx.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		ch := n.TableChanged()
		if n.TableIndex() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-n.ctx.Done():
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("failed to wait for table index %d (at %d): %w", index, n.TableIndex(), ctx.Err())
		}
	}
}

// futureError returns f's error once raft answers it, or raft.ErrRaftShutdown
// once Close has begun shutting raft down. Raft never answers a future whose
// entry is still queued for its FSM when it shuts down (its FSM goroutine returns
// without draining the queue), and a wait on such a future would block Close,
// which waits for the raft listener's connection handlers and the node's
// goroutines; raft's Shutdown itself closes the transport and so waits for those
// handlers. The entry may have committed all the same: callers take
// ErrRaftShutdown as an unknown outcome. The goroutine that waits on f outlives
// the call only when raft never answers, and then only until the process ends.
func (n *Node) futureError(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.raftDown:
		select {
		case err := <-done:
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}
