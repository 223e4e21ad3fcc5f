package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// Planned moves on the old owner's side. When the leader begins handing partitions
// of this node to another member (a drain, or a rebalance), the cluster node calls
// cluster.Config.OnHandoff, which is Server.handOff:
//
//  1. The gate below opens for the partitions' sandboxes active here, then their
//     streams end: WebSockets close with 1012 (service restart) and SSE streams
//     finish; clients reconnect through any node and are held until the new owner
//     serves. (Ending a stream is a turn of its actor, which must find the gate
//     open: see handOff.)
//  2. Each of their activations here ends as a planned move (actor.Node.Deactivate):
//     its processes end and their exits are recorded, and its record is marked as
//     left, so the next owner's sandbox.moved says "planned": true.
//  3. Once every one of them ended, the workspace of each, and of every sandbox of
//     the partitions it holds one of, is announced to the new owner, which then
//     waits for it before it serves the sandbox, and streamed in the background
//     (workspace_move.go).
//  4. The hook returns; the cluster node reports to the leader, which gives the
//     partitions to the new owner at once.
//
// Step 2 writes while the table already refuses the sandboxes (cluster.ErrHandoff)
// and their epoch has moved to the handoff's. handoffGate lets exactly those
// activations through: for a sandbox this node is ending, while its partition is in
// handoff from this node and the node holds its lease, the actor is told the
// sandbox is admitted at the epoch before the handoff (cluster.Assignment.Prev),
// which its activation was loaded at; the cluster store accepts writes stamped with
// that epoch until the handoff ends. Any other activation, and any new one after
// the ending one stopped, sees the cluster's own answer (handoffGate.admit).
//
// The gate stays open for at most one lease after the hook began. The leader
// completes a handoff nobody reported once the lease plus its margin have passed
// since it applied the BeginHandoff, which this node applied no earlier, so an
// activation still ending then has stopped writing and halts (its processes are
// killed, what it had not written is recorded as lost, as after a crash) before
// another node can admit the sandbox, unless this node applied the BeginHandoff
// more than the margin late. Writes are safe regardless: the store orders them
// against the CompleteHandoff and refuses those after it.

// handoffWorkers bounds how many activations one handoff ends, and how many
// workspaces it streams, at once: each may wait for its processes' kill grace, or
// for a stream the new owner writes to disk.
const handoffWorkers = 8

// handoffGate is the actor's admission and epoch (actor.Config.Admission, Epoch):
// the cluster node's, except for the sandboxes a handoff is ending here. It is safe
// for concurrent use; the common path takes no lock.
type handoffGate struct {
	cn      *cluster.Node
	window  time.Duration // how long after a hook began its activations may write
	pending atomic.Int64  // len(ending): the fast path skips the lock when 0
	mu      sync.Mutex
	ending  map[string]time.Time // sandbox → end of its window (monotonic)

	// Workspaces announced to this node by a planned move (workspace_arrivals.go):
	// their sandboxes are refused until the import ended.
	arriving atomic.Int64 // len(incoming)
	incoming map[string]*arrival
	// alive reports whether a member is alive (set once before the server serves).
	alive func(cluster.NodeID) bool
	// isActive reports whether a sandbox has an activation on this node (the actor
	// node's IsActive, set once it is open).
	isActive atomic.Pointer[func(sb string) bool]
}

// newHandoffGate returns the gate of cn, whose node lease is lease.
func newHandoffGate(cn *cluster.Node, lease time.Duration) *handoffGate {
	return &handoffGate{cn: cn, window: lease, ending: map[string]time.Time{}}
}

// admit is actor.Config.Admission. The gate admits the turns of an activation
// that a handoff is ending here, never a new activation: a request that comes
// after the ending one stopped (a stream's detach, a client's retry) would
// otherwise start the sandbox again here and hold its workspace in use when it
// is to be streamed to the new owner. The actor node asks before it starts an
// activation only when it has none, and its activations ask while they are
// registered, so "has an activation" tells the two apart.
func (g *handoffGate) admit(sb string) error {
	if g.isArriving(sb) {
		return cluster.ErrHandoff
	}
	err := g.cn.Admit(sb)
	if err != nil && errors.Is(err, cluster.ErrHandoff) && g.passivating(sb) && g.hasActivation(sb) {
		return nil
	}
	return err
}

// hasActivation reports whether sb has an activation here; true until the actor
// node is open (nothing is ending before the server exists).
func (g *handoffGate) hasActivation(sb string) bool {
	f := g.isActive.Load()
	return f == nil || (*f)(sb)
}

// epoch is actor.Config.Epoch.
func (g *handoffGate) epoch(sb string) uint64 {
	if g.passivating(sb) {
		return g.cn.Placement(sb).Prev
	}
	return g.cn.Epoch(sb)
}

// passivating reports whether sb's activation is being ended here by a handoff that
// is still under way, on a node that holds its lease.
func (g *handoffGate) passivating(sb string) bool {
	if g.pending.Load() == 0 {
		return false
	}
	g.mu.Lock()
	until, ok := g.ending[sb]
	g.mu.Unlock()
	if !ok || !time.Now().Before(until) || !errors.Is(g.cn.Admit(sb), cluster.ErrHandoff) {
		return false // the handoff is over
	}
	a := g.cn.Placement(sb) // its pin's, for a pinned sandbox a drain moves
	valid, _ := g.cn.Lease()
	return valid && a.Owner == g.cn.ID()
}

// begin opens the gate for sb until until.
func (g *handoffGate) begin(sb string, until time.Time) {
	g.mu.Lock()
	if _, ok := g.ending[sb]; !ok {
		g.pending.Add(1)
	}
	g.ending[sb] = until
	g.mu.Unlock()
}

func (g *handoffGate) end(sb string) {
	g.mu.Lock()
	if _, ok := g.ending[sb]; ok {
		delete(g.ending, sb)
		g.pending.Add(-1)
	}
	g.mu.Unlock()
}

// handOff is cluster.Config.OnHandoff once the server exists (see the top of this
// file). It returns when every activation of h's partitions here has ended, or when
// ctx is done (the cluster node closing).
func (s *Server) handOff(ctx context.Context, h cluster.Handoff) {
	until := time.Now().Add(s.handoffs.window)
	parts := make(map[int]bool, len(h.Partitions))
	for _, p := range h.Partitions {
		parts[p] = true
	}
	pinned := make(map[string]bool, len(h.Sandboxes))
	for _, sb := range h.Sandboxes {
		pinned[sb] = true
	}
	// A sandbox of a moving partition that is pinned here is not moving (Admit
	// admits it); a pinned sandbox a drain moves is in handoff itself.
	moving := func(sb string) bool {
		return (parts[cluster.PartitionOf(sb)] || pinned[sb]) && errors.Is(s.cluster.Admit(sb), cluster.ErrHandoff)
	}
	// The gate opens for every activation to end before anything else happens here:
	// ending the streams detaches their clients, which are turns of the actors, and
	// a turn the gate did not let through would find the epoch moved and halt the
	// activation without saving, as in a crash (its processes recorded as lost).
	var ids []string
	active := map[string]bool{}
	for _, sb := range s.node.ActiveSandboxes() {
		if moving(sb) {
			ids = append(ids, sb)
			active[sb] = true
			s.handoffs.begin(sb, until)
		}
	}
	nActive := len(ids)
	stopped := s.streams.stopWhere(moving)
	send := s.cfg.WorkspaceMoveMax >= 0
	if send { // and the workspaces of those it does not run (workspace_move.go)
		stored, err := s.node.Workspaces()
		if err != nil {
			s.log.Error("failed to list workspaces to stream for a planned move: they are lost", "err", err)
		}
		for _, sb := range stored {
			if !active[sb] && moving(sb) {
				ids = append(ids, sb)
			}
		}
	}
	s.log.Info("handing sandboxes over to another node", "to", h.To, "partitions", len(h.Partitions),
		"pinned", len(h.Sandboxes), "active", nActive, "workspaces", len(ids)-nActive, "streams", stopped)
	// Every activation ends before any workspace streams: a stream must not hold
	// another sandbox's deactivation past the gate's window.
	failed := map[string]bool{}
	var mu sync.Mutex
	inParallel(ctx, ids[:nActive], func(sb string) {
		err := s.node.Deactivate(ctx, sb)
		s.handoffs.end(sb)
		if err != nil {
			s.log.Warn("failed to end a sandbox's activation for a planned move", "sandbox", sb, "err", err)
			mu.Lock()
			failed[sb] = true // its workspace may still be in use: it stays
			mu.Unlock()
		}
	})
	for _, sb := range ids[:nActive] {
		s.handoffs.end(sb) // those the node's closing skipped
	}
	if !send || ctx.Err() != nil {
		return
	}
	var move []string
	for _, sb := range ids {
		if !failed[sb] && moving(sb) {
			move = append(move, sb)
		}
	}
	s.moveWorkspaces(h, move)
}

// inParallel calls f for each of ids on up to handoffWorkers goroutines and returns
// when every call returned; once ctx is done, the ids not yet handed out are skipped.
func inParallel(ctx context.Context, ids []string, f func(sb string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(handoffWorkers, len(ids)) {
		wg.Go(func() {
			for sb := range work {
				f(sb)
			}
		})
	}
	for _, sb := range ids {
		select {
		case work <- sb:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// stopWhere stops and unregisters the streams of every sandbox that match selects,
// and returns how many it stopped. The stop functions run without the lock.
func (g *streamRegistry) stopWhere(match func(sb string) bool) int {
	var stops []func()
	g.mu.Lock()
	for sb, m := range g.by {
		if !match(sb) {
			continue
		}
		for _, stop := range m {
			stops = append(stops, stop)
		}
		delete(g.by, sb)
	}
	g.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	return len(stops)
}
