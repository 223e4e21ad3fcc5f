package cluster

import "sort"

// Placement is rendezvous (highest-random-weight) hashing of partitions over the alive
// members: partition p belongs to the member with the highest weight(p, member). Adding
// a member moves only the partitions it now wins (about 1/N of them), and removing one
// moves only the partitions it held. Lookups never hash per request: the result is
// written into the replicated table, and Owner reads the table.

// memberSeed hashes a member id (64-bit FNV-1a).
func memberSeed(id NodeID) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// weight mixes a member seed with a key through splitmix64's finalizer, which spreads
// neighbouring keys well enough that each member wins close to 1/N of them.
func weight(seed, key uint64) uint64 {
	z := seed ^ (key * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// aliveIDs returns the alive members' ids in order (the order does not change the
// result, it only makes iteration deterministic).
func aliveIDs(s *state) []NodeID {
	ids := make([]NodeID, 0, len(s.members))
	for id, m := range s.members {
		if m.Status == StatusAlive {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// desired returns the rendezvous owner of every partition among ids (nil if none).
func desired(ids []NodeID) []NodeID {
	if len(ids) == 0 {
		return nil
	}
	seeds := make([]uint64, len(ids))
	for i, id := range ids {
		seeds[i] = memberSeed(id)
	}
	out := make([]NodeID, Partitions)
	for p := range out {
		best, bw := 0, uint64(0)
		for i, s := range seeds {
			if w := weight(s, uint64(p)); i == 0 || w > bw {
				best, bw = i, w
			}
		}
		out[p] = ids[best]
	}
	return out
}

// pickMember returns the member among cands with the highest weight for key (a
// sandbox id), or "" when cands is empty.
func pickMember(cands []NodeID, key string) NodeID {
	k := memberSeed(NodeID(key))
	var best NodeID
	var bw uint64
	for i, id := range cands {
		if w := weight(memberSeed(id), k); i == 0 || w > bw {
			best, bw = id, w
		}
	}
	return best
}

// plan returns the moves that bring s towards the rendezvous placement over its alive
// members. Partitions that nobody serves (unassigned, or owned by a member that is not
// alive) move at once: nothing runs there to disturb. Partitions that only move to
// rebalance onto a new member are limited to budget (used counts them), and skipped while busy reports
// work on them; they are picked in partition order, so successive calls make progress.
func plan(s *state, budget int, busy func(p int) bool) (moves []move, used, pending int) {
	return planFenced(s, budget, busy, nil)
}

// planFenced is plan where a partition whose owner may still hold a lease stays put:
// movable (nil: always) reports whether a member that is no longer alive is past its
// lease, so that nothing it still serves is handed to another node. Unassigned
// partitions have no owner to wait for and move at once. Partitions in handoff are
// left to the handoff's end (pending). Partitions of a draining member are moved like
// rebalance moves, within budget, but busy ones too, after the idle ones: a drain is
// the one move that takes running work (with notice, through the handoff). The caller
// turns every move off a member that still serves (alive or draining) into a handoff.
func planFenced(s *state, budget int, busy func(p int) bool, movable func(NodeID) bool) (moves []move, used, pending int) {
	want := desired(aliveIDs(s))
	if want == nil {
		return nil, 0, 0
	}
	var later []move // busy partitions of draining members, after the idle moves
	for p, a := range s.parts {
		if a.State == PartitionHandoff {
			pending++
			continue
		}
		if a.Owner == want[p] && a.State == PartitionActive {
			continue
		}
		draining := a.State == PartitionActive && s.members[a.Owner].Status == StatusDraining
		orphan := a.State != PartitionActive || (!s.alive(a.Owner) && !draining)
		if orphan && a.State == PartitionActive && movable != nil && !movable(a.Owner) {
			pending++
			continue
		}
		m := move{P: p, Owner: want[p], Expect: a.Epoch}
		if !orphan {
			if busy != nil && busy(p) {
				if draining {
					later = append(later, m)
				} else {
					pending++
				}
				continue
			}
			if budget <= 0 {
				pending++
				continue
			}
			budget--
			used++
		}
		moves = append(moves, m)
	}
	for _, m := range later {
		if budget <= 0 {
			pending++
			continue
		}
		budget--
		used++
		moves = append(moves, m)
	}
	return moves, used, pending
}
