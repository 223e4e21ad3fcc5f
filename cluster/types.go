package cluster

// NodeID is a node's stable identity, used as its raft server id. The gateway keeps one
// in its data directory so that a restarted node is the same member.
type NodeID string

// Status is a member's state in the member table.
type Status uint8

// Member states.
const (
	// StatusAlive members take partitions.
	StatusAlive Status = 1
	// StatusDown members are known but take no partitions (set by liveness, later).
	StatusDown Status = 2
	// StatusLeft members were removed; their partitions have been reassigned.
	StatusLeft Status = 3
	// StatusDraining members keep serving what they own while the leader hands
	// every partition of theirs to the alive members (see Node.Drain); they take
	// no new partitions.
	StatusDraining Status = 4
)

// String returns "alive", "down", "left", "draining" or "unknown".
func (s Status) String() string {
	switch s {
	case StatusAlive:
		return "alive"
	case StatusDown:
		return "down"
	case StatusLeft:
		return "left"
	case StatusDraining:
		return "draining"
	}
	return "unknown"
}

// Member is one node of the cluster as the replicated member table records it.
type Member struct {
	// ID is the node's stable id. Required.
	ID NodeID
	// RaftAddr is the host:port other nodes reach its raft transport at. Required.
	RaftAddr string
	// HTTPAddr is where the gateway forwards requests for its partitions.
	HTTPAddr string
	// Labels are matched by pin selectors (policy routing).
	Labels map[string]string
	// Status is set by the cluster; Join ignores the value passed in.
	Status Status
}

func (m Member) equal(o Member) bool {
	if m.ID != o.ID || m.RaftAddr != o.RaftAddr || m.HTTPAddr != o.HTTPAddr || m.Status != o.Status || len(m.Labels) != len(o.Labels) {
		return false
	}
	for k, v := range m.Labels {
		if w, ok := o.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// matches reports whether m carries every label of sel.
func (m Member) matches(sel map[string]string) bool {
	for k, v := range sel {
		if w, ok := m.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// PartitionState is the state of one partition's assignment.
type PartitionState uint8

// Partition states.
const (
	// PartitionUnassigned has no owner (a fresh cluster, or an orphan pin).
	PartitionUnassigned PartitionState = 0
	// PartitionActive is owned and served by Owner.
	PartitionActive PartitionState = 1
	// PartitionHandoff is being handed from Owner to Next (see Handoff): Owner no
	// longer admits its sandboxes and Next does not yet, so requests are held.
	PartitionHandoff PartitionState = 2
)

// Assignment is the owner of one partition (or one pinned sandbox).
type Assignment struct {
	// Owner is the node serving it; empty when unassigned.
	Owner NodeID
	// Epoch is the raft log index of the entry that last set Owner or State. It only
	// grows, across leader terms, so it can fence writes of a previous owner.
	Epoch uint64
	// State is PartitionActive when Owner serves it.
	State PartitionState
	// Next is the member the partition is being handed to while State is
	// PartitionHandoff, empty otherwise.
	Next NodeID
	// Prev is, while State is PartitionHandoff, the epoch the partition had when the
	// handoff began (0 otherwise): the old owner's activations were loaded at it,
	// and the store still accepts their last writes (passivation) stamped with it
	// until the handoff ends.
	Prev uint64
}
