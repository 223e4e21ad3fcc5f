package gateway

import (
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// Workspaces announced to this node by a planned move (workspace_move.go, step 2):
// while one is awaited or arriving, the gate refuses its sandbox here.

// arrival is one announced workspace.
type arrival struct {
	epoch     uint64         // the handoff's
	from      cluster.NodeID // the old owner, which streams it
	until     time.Time      // awaited until then at most
	streaming bool           // its stream is being received
}

// announce records that sb's workspace comes from from for the handoff at epoch. It
// reports false when one is being received already.
func (g *handoffGate) announce(sb string, epoch uint64, from cluster.NodeID, until time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.incoming[sb]
	if a != nil && a.streaming {
		return false
	}
	if g.incoming == nil {
		g.incoming = map[string]*arrival{}
	}
	if a == nil {
		g.arriving.Add(1)
	}
	g.incoming[sb] = &arrival{epoch: epoch, from: from, until: until}
	return true
}

// receive marks sb's announced workspace as being received, if it is awaited from
// from at epoch and nobody receives it yet.
func (g *handoffGate) receive(sb string, epoch uint64, from cluster.NodeID) bool {
	if !g.isArriving(sb) { // drops it if it is no longer awaited
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.incoming[sb]
	if a == nil || a.streaming || a.epoch != epoch || a.from != from {
		return false
	}
	a.streaming = true
	return true
}

// arrived ends sb's arrival: its stream was received or failed.
func (g *handoffGate) arrived(sb string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.incoming[sb]; ok {
		delete(g.incoming, sb)
		g.arriving.Add(-1)
	}
}

// isArriving reports whether sb's workspace is awaited or being received here. An
// announcement past its time, or whose sender is no longer an alive member, is
// dropped: once dropped it never counts again, so a sandbox the gate let through is
// never given a workspace behind its back. The common path takes no lock.
func (g *handoffGate) isArriving(sb string) bool {
	if g.arriving.Load() == 0 {
		return false
	}
	g.mu.Lock()
	a := g.incoming[sb]
	if a == nil || a.streaming {
		g.mu.Unlock()
		return a != nil
	}
	from, until := a.from, a.until
	g.mu.Unlock()
	// Outside the lock: the member list is the cluster's.
	if time.Now().Before(until) && (g.alive == nil || g.alive(from)) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.incoming[sb] != a {
		return g.incoming[sb] != nil // announced again meanwhile
	}
	if a.streaming {
		return true // taken meanwhile by a stream that checked first
	}
	delete(g.incoming, sb)
	g.arriving.Add(-1)
	return false
}

// serve is the request path's admission: the cluster's, except that a sandbox whose
// workspace is awaited or arriving is held as one in handoff is.
func (g *handoffGate) serve(sb string) error {
	if g.isArriving(sb) {
		return cluster.ErrHandoff
	}
	return g.cn.Admit(sb)
}

// memberUp returns handoffGate.alive for cn: a member alive or draining (a draining
// member streams what it hands over), not down or gone.
func memberUp(cn *cluster.Node) func(cluster.NodeID) bool {
	return func(id cluster.NodeID) bool {
		for _, m := range cn.Members() {
			if m.ID == id {
				return m.Status == cluster.StatusAlive || m.Status == cluster.StatusDraining
			}
		}
		return false
	}
}
