package cluster

// The getters an operator's view of the cluster needs beyond the member table:
// who votes in raft, and how the partitions are spread over the members.

// Voters returns the servers of the latest raft configuration this node knows, each
// with whether it votes (true) or only replicates (false). A member of the member
// table that is missing here is not (or no longer) part of raft: a node waiting to
// be added, or one removed. The configuration may be newer than the member table (it
// counts once appended, before it commits). It does not block: raft keeps the latest
// configuration for readers.
func (n *Node) Voters() map[NodeID]bool {
	servers, err := n.RaftServers()
	if err != nil {
		return map[NodeID]bool{}
	}
	return servers
}

// Spread returns how many of the Partitions partitions each member owns in this
// node's replica of the table; unassigned partitions are counted under the empty
// NodeID. Pinned sandboxes are not partitions and are not counted. It reads the
// latest applied table without a lock.
func (n *Node) Spread() map[NodeID]int {
	return n.fsm.cur.Load().spread()
}

// spread counts the active partitions of each owner, the unassigned under "".
func (s *state) spread() map[NodeID]int {
	out := make(map[NodeID]int)
	for _, a := range s.parts {
		if a.State != PartitionActive {
			out[""]++
			continue
		}
		out[a.Owner]++
	}
	return out
}
