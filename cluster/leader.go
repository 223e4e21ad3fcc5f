package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// reconcileTick is how often the leader re-plans when nothing kicks it.
const reconcileTick = 250 * time.Millisecond

// watchLeadership drains raft's leadership notifications on one goroutine and runs the
// reconcile loop exactly while this node leads.
func (n *Node) watchLeadership(notify <-chan bool) {
	defer n.leading.Done()
	type run struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	var cur *run
	halt := func() {
		if cur != nil {
			cur.cancel()
			<-cur.done
			cur = nil
		}
	}
	defer halt()
	for {
		select {
		case <-n.ctx.Done():
			return
		case lead := <-notify:
			if !lead {
				halt()
				continue
			}
			if cur == nil {
				ctx, cancel := context.WithCancel(n.ctx)
				cur = &run{cancel: cancel, done: make(chan struct{})}
				go func(done chan struct{}) {
					defer close(done)
					n.lead(ctx)
				}(cur.done)
			}
		}
	}
}

// lead is the leader's loop. A Barrier first makes the replica current with everything
// earlier leaders committed, so plans are computed from the real table and heartbeat
// grants carry an index that covers every earlier term. The liveness record starts
// before it: every member counts as heard when this leadership began, so nothing
// moves for L + δ (the longest any lease granted by an earlier leader can run),
// except the previous leader's partitions when its last lease entry tells when its
// lease began (countFromLog). Then the leader commits its own first lease entry,
// and only then grants heartbeats.
func (n *Node) lead(ctx context.Context) {
	since := n.now()
	n.live.start(since)
	defer n.live.stop()
	if n.cfg.onLead != nil {
		n.cfg.onLead(since)
	}
	term := n.raft.CurrentTerm()
	if err := n.raft.Barrier(0).Error(); err != nil {
		n.log.Warn("cluster: failed to barrier as new leader", "err", err)
		return
	}
	prev, at, floored := n.countFromLog(term)
	if err := n.renewOwnLease(ctx); err != nil {
		n.log.Warn("cluster: failed to commit the leader's own lease", "err", err)
		return
	}
	if floored {
		n.floorPrevious(prev, at)
	}
	n.live.setReady(term)
	n.log.Info("cluster: leading", "term", term, "ready_after", n.now()-since)
	var own sync.WaitGroup
	own.Add(1)
	go func() {
		defer own.Done()
		n.ownLease(ctx)
	}()
	defer own.Wait() // after ctx ends: the loop below returns only then
	t := time.NewTimer(reconcileTick)
	defer t.Stop()
	rate := float64(n.cfg.RebalanceRate)
	tokens, last := rate*reconcileTick.Seconds(), time.Now()
	handoffs := newHandoffClock()
	for {
		now := time.Now()
		tokens = min(tokens+rate*now.Sub(last).Seconds(), rate)
		last = now
		tokens -= float64(n.reconcile(ctx, int(tokens), handoffs))
		// Wake at the next tick, or as soon as a member's L + δ runs out, so that a
		// dead member's partitions move right then rather than up to a tick later
		// (and likewise an unreported handoff).
		t.Reset(min(reconcileTick, n.live.nextDeadline(n.now(), n.grace()), handoffs.nextDeadline(n.now(), n.grace())))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.kick:
		}
	}
}

// kickLeader wakes the reconcile loop without blocking.
func (n *Node) kickLeader() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// reconcile makes one pass of the leader's duties and returns how many partitions it
// moved for rebalancing (against the rate budget). Failures are logged and retried on
// the next pass: a stale epoch only means the table changed under the plan.
func (n *Node) reconcile(ctx context.Context, budget int, handoffs *handoffClock) (used int) {
	self := n.Self()
	self.Status = StatusAlive
	// A leader registers itself when it is missing or its addresses changed, but never
	// brings itself back from left: only Join re-admits a removed member. (Remove of
	// the leader marks it left before the raft change that makes it step down.)
	if m, ok := n.fsm.cur.Load().members[self.ID]; !ok || (m.Status == StatusAlive && !m.equal(self)) {
		if err := n.apply(ctx, encodeRegister(self)); err != nil {
			n.log.Warn("cluster: failed to register self", "err", err)
			return 0
		}
	}
	n.checkLiveness(ctx)
	n.checkDraining(ctx)
	n.cleanupDead(ctx)
	n.promote(ctx)
	n.tendHandoffs(ctx, handoffs)
	s := n.fsm.cur.Load()
	moves, used, pending := planFenced(s, budget, n.cfg.Busy, n.movable)
	assign, begin := splitMoves(s, moves)
	if len(assign) > 0 {
		if err := n.apply(ctx, encodeAssign(assign)); err != nil {
			n.log.Warn("cluster: failed to assign partitions", "moves", len(assign), "err", err)
			return 0
		}
		n.log.Debug("cluster: assigned partitions", "moves", len(assign), "pending", pending)
	}
	if len(begin) > 0 {
		if err := n.apply(ctx, encodeBeginHandoff(begin)); err != nil {
			n.log.Warn("cluster: failed to begin handoffs", "partitions", len(begin), "err", err)
			return 0
		}
		n.log.Debug("cluster: began handoffs", "partitions", len(begin), "pending", pending)
	}
	n.repin(ctx)
	n.sweepPins(ctx, handoffs)
	return used + n.drainPins(ctx, budget-used, handoffs)
}

// voterTarget is how many voters the cluster keeps: 3, or 5 past ten members. More
// voters make every commit wait for more acknowledgements; fewer lose quorum sooner.
func voterTarget(members int) int {
	if members > 10 {
		return 5
	}
	return 3
}

// promote turns alive non-voters into voters while there are fewer than the target.
// Only non-voters that have heartbeated to this leader are promoted: one that raft
// cannot reach (a wrong cluster secret, a bad address) would otherwise count towards
// the quorum and could stop a small cluster from committing anything.
func (n *Node) promote(ctx context.Context) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	s := n.fsm.cur.Load()
	voters := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
	}
	target := voterTarget(len(aliveIDs(s)))
	for _, srv := range f.Configuration().Servers {
		if voters >= target {
			return
		}
		if srv.Suffrage != raft.Nonvoter || !s.alive(NodeID(srv.ID)) || !n.live.hasBeat(NodeID(srv.ID)) {
			continue
		}
		if err := n.wait(ctx, n.raft.AddVoter(srv.ID, srv.Address, f.Index(), enqueueTimeout(ctx))); err != nil {
			n.log.Warn("cluster: failed to promote to voter", "node", srv.ID, "err", err)
			return
		}
		voters++
	}
}

// repin moves pins whose owner is gone (and past its lease) to an alive member
// matching their selector, or marks them unassigned when none matches.
func (n *Node) repin(ctx context.Context) {
	s := n.fsm.cur.Load()
	for sb, p := range s.pins {
		if p.State == PartitionHandoff {
			continue // tendHandoffs ends it
		}
		if p.State == PartitionActive && (s.alive(p.Owner) || !n.movable(p.Owner)) {
			continue
		}
		owner := pickMember(matching(s, p.Selector), sb)
		if owner == p.Owner {
			continue
		}
		if err := n.apply(ctx, encodePin(sb, p.Selector, owner, p.Epoch)); err != nil {
			n.log.Warn("cluster: failed to re-pin sandbox", "sandbox", sb, "err", err)
		}
	}
}

// matching returns the alive members carrying every label of sel, in id order.
func matching(s *state, sel map[string]string) []NodeID {
	var out []NodeID
	for _, id := range aliveIDs(s) {
		if s.members[id].matches(sel) {
			out = append(out, id)
		}
	}
	return out
}
