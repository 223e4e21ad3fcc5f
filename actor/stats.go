package actor

// Stats is a point-in-time view of a node, for metrics.
type Stats struct {
	// ActiveSandboxes counts sandbox actors in memory (not passivated).
	ActiveSandboxes int
	// Processes, Sessions and Terminals sum the counts of the active sandboxes, as of
	// each one's last turn.
	Processes, Sessions, Terminals int
	// MemoryBytes, Pids and DiskBytes sum the usage of the active sandboxes, as of each
	// one's last turn; its memory and pids figures may be up to a second older than
	// that turn (a busy sandbox does not read its cgroup after every turn).
	MemoryBytes, DiskBytes int64
	Pids                   int
	// UnreadableSandboxes counts sandboxes whose stored records the storage could not
	// read (a damaged file): they answer ErrCorrupt until it is repaired and the node
	// restarted. Found at open and by later reads and writes.
	UnreadableSandboxes int
	// MountedImages counts the workspace disk images mounted now (Config.DiskImages).
	MountedImages int
	// ExitedDropped counts the exited-process records dropped since Open because
	// their sandbox kept Config.ExitedLimit newer ones (a counter).
	ExitedDropped int64
}

// Stats sums what the active sandboxes last published. It never waits for an actor, so
// it is cheap enough for every metrics scrape; it is safe for concurrent use.
func (n *Node) Stats() Stats {
	st := Stats{ExitedDropped: n.exitedDropped.Load()}
	if d, ok := n.store.(damageReporter); ok {
		for _, dm := range d.Damaged() {
			if dm.Sandbox != "" {
				st.UnreadableSandboxes++
			}
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st.ActiveSandboxes = len(n.actors)
	st.MountedImages = n.MountedImages()
	for _, a := range n.actors {
		if in := a.info.Load(); in != nil {
			st.Processes += in.Counts.Processes
			st.Sessions += in.Counts.Sessions
			st.Terminals += in.Counts.Terminals
			if u := in.Usage; u != nil {
				st.MemoryBytes += u.MemoryBytes
				st.Pids += u.Pids
				st.DiskBytes += u.DiskBytes
			}
		}
	}
	return st
}
