package actor

import "slices"

// Busy reports whether sandbox sb is active on this node and holds what keeps it from
// passivating: running processes, terminals or session shells, attached clients
// (Attach), or work in flight (exec, session commands). It reads what the sandbox's
// actor published after its last group of turns, so it never waits for the actor; it
// takes the node's registry lock briefly. The cluster's leader asks it (through the
// gateway) before moving a partition to rebalance: a busy sandbox would lose its
// processes. Safe for concurrent use. (Extension.)
func (n *Node) Busy(sb string) bool {
	a := n.active(sb)
	return a != nil && a.busy.Load()
}

// BusySandboxes returns the ids of the sandboxes for which Busy is true, in id order:
// for a caller that asks about many (a whole partition) at once. (Extension.)
func (n *Node) BusySandboxes() []string {
	n.mu.Lock()
	var ids []string
	for id, a := range n.actors {
		if a.busy.Load() {
			ids = append(ids, id)
		}
	}
	n.mu.Unlock()
	slices.Sort(ids)
	return ids
}
