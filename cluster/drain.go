package cluster

import (
	"context"
	"fmt"
)

// Drain empties a member before it is stopped or removed; it must run on the leader,
// and returns a *NotLeaderError elsewhere (see Join).
//
//  1. The member is marked draining: it keeps its lease and serves what it owns,
//     but takes no new partitions.
//  2. The reconcile loop hands each of its partitions to the rendezvous owner among
//     the alive members, at RebalanceRate like a rebalance, idle partitions first
//     and busy ones too: a drain is the one move that takes running work, and the
//     member is told of each through Config.OnHandoff.
//  3. A drained member owns no partition (Drained) and stays a member until Remove.
//     If it goes silent it is failed like any member; when it heartbeats again it
//     is alive, and the rebalance gives it partitions back (a rolling restart).
//
// Pinned sandboxes of the member move the same way, each to a member matching its
// pool (pindrain.go); one that no alive member matches stays, and Unmovable names
// it. Draining a member already draining does nothing. Join of the member makes it
// alive again.
func (n *Node) Drain(ctx context.Context, id NodeID) error {
	if err := n.drain(ctx, id); err != nil {
		return fmt.Errorf("failed to drain %s: %w", id, err)
	}
	return nil
}

func (n *Node) drain(ctx context.Context, id NodeID) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	m, ok := n.fsm.cur.Load().members[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrUnknownMember, id)
	case m.Status == StatusDraining:
		return nil
	case m.Status != StatusAlive:
		return fmt.Errorf("%w: %s is %s", ErrUnknownMember, id, m.Status)
	}
	if err := n.apply(ctx, encodeSetStatus(id, StatusDraining)); err != nil {
		return err
	}
	n.kickLeader()
	return nil
}

// Drained reports whether member id is draining and, in this node's table, owns no
// partition, active or in handoff, and no pinned sandbox but those no alive member
// matches (Unmovable): the drain has moved everything it can.
func (n *Node) Drained(id NodeID) bool {
	s := n.fsm.cur.Load()
	if s.members[id].Status != StatusDraining {
		return false
	}
	for _, a := range s.parts {
		if a.Owner == id {
			return false
		}
	}
	for _, p := range s.pins {
		if p.Owner == id && (p.State != PartitionActive || len(matching(s, p.Selector)) > 0) {
			return false
		}
	}
	return true
}

// serving reports whether member id runs what it owns: alive, or draining.
func (s *state) serving(id NodeID) bool {
	m, ok := s.members[id]
	return ok && (m.Status == StatusAlive || m.Status == StatusDraining)
}

// checkDraining fails each draining member silent for longer than L + δ, as
// checkLiveness does for alive ones.
func (n *Node) checkDraining(ctx context.Context) {
	s := n.fsm.cur.Load()
	for _, id := range sortedIDs(s) {
		if s.members[id].Status != StatusDraining || !n.live.beginFail(id, n.now(), n.grace()) {
			continue
		}
		err := n.failMember(ctx, id)
		n.live.endFail(id)
		if err != nil {
			n.log.Warn("cluster: failed to mark a silent draining member down", "node", id, "err", err)
			return
		}
	}
}
