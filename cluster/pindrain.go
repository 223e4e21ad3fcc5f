package cluster

import (
	"context"
	"sort"
)

// A drain moves pinned sandboxes too. A sandbox pinned to a draining member is
// handed, by the same two phases as a partition, to the member its selector picks
// among the alive ones that match it (rendezvous-hashed on the sandbox id, as at
// create). When no alive member matches, the pin stays on the draining member, which
// keeps serving it: the drain does not wait for it (Drained ignores it), and the
// member's view lists it (Unmovable) so an operator can start a matching node or
// delete the sandbox before stopping the member.

// maxPinsPerEntry bounds the pins one BeginHandoff of pins names, so that the old
// owner's report of them stays well under maxReport.
const maxPinsPerEntry = 128

// drainPins begins handoffs of pins of draining members, at most budget of them
// (RebalanceRate, shared with partitions), and returns how many it began. Pins no
// alive member matches are logged once per leadership.
func (n *Node) drainPins(ctx context.Context, budget int, c *handoffClock) int {
	s := n.fsm.cur.Load()
	if len(s.pins) == 0 {
		return 0
	}
	var begin []pinOp
	stuck := map[string]bool{}
	for _, sb := range sortedPins(s) {
		p := s.pins[sb]
		if p.State != PartitionActive || s.members[p.Owner].Status != StatusDraining {
			continue
		}
		to := pickMember(matching(s, p.Selector), sb)
		if to == "" {
			stuck[sb] = true
			if !c.stuck[sb] {
				n.log.Warn("cluster: a drain cannot move a pinned sandbox: no alive member matches its pool",
					"sandbox", sb, "node", p.Owner, "selector", p.Selector)
			}
			continue
		}
		if len(begin) < min(budget, maxPinsPerEntry) {
			begin = append(begin, pinOp{Sandbox: sb, To: to, Expect: p.Epoch})
		}
	}
	c.stuck = stuck
	if len(begin) == 0 {
		return 0
	}
	if err := n.apply(ctx, encodePinMove(pinOpBegin, begin)); err != nil {
		n.log.Warn("cluster: failed to begin pin handoffs", "sandboxes", len(begin), "err", err)
		return 0
	}
	n.log.Debug("cluster: began pin handoffs", "sandboxes", len(begin))
	return len(begin)
}

// Unmovable returns, in id order, the sandboxes pinned to member id that a drain
// cannot move: id is draining and no alive member matches their pool. It reads
// this node's replica without a lock.
func (n *Node) Unmovable(id NodeID) []string {
	return n.fsm.cur.Load().unmovable(id)
}

func (s *state) unmovable(id NodeID) []string {
	if s.members[id].Status != StatusDraining {
		return nil
	}
	var out []string
	for _, sb := range sortedPins(s) {
		p := s.pins[sb]
		if p.Owner == id && p.State == PartitionActive && len(matching(s, p.Selector)) == 0 {
			out = append(out, sb)
		}
	}
	return out
}

// Pinned returns how many sandboxes are pinned to each member in this node's
// replica (pins in handoff count for their old owner until the handoff ends;
// unassigned pins under the empty NodeID).
func (n *Node) Pinned() map[NodeID]int {
	s := n.fsm.cur.Load()
	out := make(map[NodeID]int)
	for _, p := range s.pins {
		out[p.Owner]++
	}
	return out
}

// sortedPins returns the pinned sandbox ids in order.
func sortedPins(s *state) []string {
	ids := make([]string, 0, len(s.pins))
	for sb := range s.pins {
		ids = append(ids, sb)
	}
	sort.Strings(ids)
	return ids
}
