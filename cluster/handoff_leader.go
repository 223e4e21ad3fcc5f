package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The leader's side of planned moves: beginning handoffs for the moves the plan
// makes off members that still serve, completing them when the old owner reports
// or once any lease it held from before the handoff has surely run out, and
// aborting those whose target left.

// handoffClock is one leadership's record of when it first saw each handoff (by
// its BeginHandoff epoch), of the pinned sandboxes a drain could not move that it
// has logged, and of when it first saw each orphan pin (pinsweep.go). It lives on
// the reconcile goroutine only.
type handoffClock struct {
	seen    map[uint64]time.Duration
	stuck   map[string]bool
	orphans map[pinRef]time.Duration
	// scanned is when the sweep last looked for the records of written pins.
	scanned time.Duration
}

func newHandoffClock() *handoffClock {
	return &handoffClock{seen: map[uint64]time.Duration{}, stuck: map[string]bool{}, orphans: map[pinRef]time.Duration{}}
}

// firstSeen returns when this leadership first saw the handoff at epoch, recording
// now if it is the first time.
func (c *handoffClock) firstSeen(epoch uint64, now time.Duration) time.Duration {
	first, ok := c.seen[epoch]
	if !ok {
		first = now
		c.seen[epoch] = now
	}
	return first
}

// nextDeadline returns how long until the next handoff seen is due, or an hour.
func (c *handoffClock) nextDeadline(now, grace time.Duration) time.Duration {
	next := time.Hour
	for _, at := range c.seen {
		if d := at + grace + time.Millisecond - now; d > 0 && d < next {
			next = d
		}
	}
	return next
}

// splitMoves turns each planned move off a member that still serves the partition
// (alive or draining) into a handoff; the others (orphans) are plain assignments.
func splitMoves(s *state, moves []move) (assign []move, begin []handoff) {
	for _, m := range moves {
		a := s.parts[m.P]
		if a.State == PartitionActive && s.serving(a.Owner) {
			begin = append(begin, handoff{P: m.P, From: a.Owner, To: m.Owner, Expect: a.Epoch})
			continue
		}
		assign = append(assign, m)
	}
	return assign, begin
}

// tendHandoffs is the leader's handoff pass. A handoff whose target is no longer
// alive is aborted (the partition goes back to its old owner, and the plan moves it
// again). A handoff this leadership first saw more than L + δ ago is completed to
// its target, one command per BeginHandoff epoch: every lease its old owner was
// granted before the BeginHandoff was applied here has run out by then, and every
// lease granted since came with an index at or past it, so the old owner renewed
// only once its own table refused the partition. The first sight is never before
// this leadership began, which covers the grants of earlier leaders (see the package
// doc).
func (n *Node) tendHandoffs(ctx context.Context, c *handoffClock) {
	s := n.fsm.cur.Load()
	now, grace := n.now(), n.grace()
	var aborts []epochRef
	due := map[uint64][]move{}
	current := map[uint64]bool{}
	for p, a := range s.parts {
		if a.State != PartitionHandoff {
			continue
		}
		current[a.Epoch] = true
		first := c.firstSeen(a.Epoch, now)
		switch {
		case !s.alive(a.Next):
			aborts = append(aborts, epochRef{P: p, Expect: a.Epoch})
		case now-first > grace:
			due[a.Epoch] = append(due[a.Epoch], move{P: p, Owner: a.Next, Expect: a.Epoch})
		}
	}
	pinAborts, pinsDue := n.duePins(s, c, current, now, grace)
	for e := range c.seen {
		if !current[e] {
			delete(c.seen, e)
		}
	}
	if len(pinAborts) > 0 {
		if err := n.apply(ctx, encodePinMove(pinOpAbort, pinAborts)); err != nil {
			n.log.Warn("cluster: failed to abort pin handoffs to a member that left", "sandboxes", len(pinAborts), "err", err)
			return
		}
	}
	if len(pinsDue) > 0 {
		if err := n.apply(ctx, encodePinMove(pinOpComplete, pinsDue)); err != nil {
			n.log.Warn("cluster: failed to complete pin handoffs past the lease", "sandboxes", len(pinsDue), "err", err)
			return
		}
		n.log.Info("cluster: completed pin handoffs unreported past the lease", "sandboxes", len(pinsDue))
	}
	if len(aborts) > 0 {
		if err := n.apply(ctx, encodeAbortHandoff(aborts)); err != nil {
			n.log.Warn("cluster: failed to abort handoffs to a member that left", "partitions", len(aborts), "err", err)
			return
		}
		n.log.Info("cluster: aborted handoffs to a member that left", "partitions", len(aborts))
	}
	epochs := make([]uint64, 0, len(due))
	for e := range due {
		epochs = append(epochs, e)
	}
	slices.Sort(epochs)
	for _, e := range epochs {
		if err := n.apply(ctx, encodeCompleteHandoff(due[e])); err != nil {
			n.log.Warn("cluster: failed to complete handoffs past the lease", "epoch", e, "err", err)
			return
		}
		n.log.Info("cluster: completed handoffs unreported past the lease", "epoch", e, "partitions", len(due[e]))
	}
}

// duePins is tendHandoffs for pins in handoff: those whose target is no longer
// alive are to be aborted, those this leadership first saw more than grace ago are
// due. It records first sights in c and marks their epochs current.
func (n *Node) duePins(s *state, c *handoffClock, current map[uint64]bool, now, grace time.Duration) (aborts, due []pinOp) {
	for sb, p := range s.pins {
		if p.State != PartitionHandoff {
			continue
		}
		current[p.Epoch] = true
		first := c.firstSeen(p.Epoch, now)
		switch {
		case !s.alive(p.Next):
			aborts = append(aborts, pinOp{Sandbox: sb, Expect: p.Epoch})
		case now-first > grace:
			due = append(due, pinOp{Sandbox: sb, Expect: p.Epoch})
		}
	}
	return aborts, due
}

// completeHandoff takes the old owner's report that it has stopped running the
// sandboxes of h's partitions (handoff_report.go): the leader gives each partition
// still in that handoff to its target at once, with a new epoch. The report comes
// only after the old owner's table refuses the partitions, which is what makes the
// early completion safe. Partitions no longer in that handoff (completed already,
// aborted) are skipped, so a report repeated after an indeterminate failure is
// harmless. It returns how many partitions it moved, or a *NotLeaderError off the
// leader.
func (n *Node) completeHandoff(ctx context.Context, h Handoff) (int, error) {
	if !n.IsLeader() {
		return 0, n.notLeader()
	}
	// A leader that has just taken over may not have applied the BeginHandoff yet.
	n.fsm.waitIndex(ctx, h.Epoch, n.cfg.LeaseTTL)
	s := n.fsm.cur.Load()
	var moves []move
	for _, p := range h.Partitions {
		if p < 0 || p >= Partitions {
			return 0, fmt.Errorf("%w: partition %d", ErrInvalid, p)
		}
		a := s.parts[p]
		if a.State != PartitionHandoff || a.Epoch != h.Epoch || a.Owner != h.From || !s.alive(a.Next) {
			continue // done, aborted, or (target gone) left to the reconcile loop
		}
		moves = append(moves, move{P: p, Owner: a.Next, Expect: a.Epoch})
	}
	var pins []pinOp
	for _, sb := range h.Sandboxes {
		p, ok := s.pins[sb]
		if !ok || p.State != PartitionHandoff || p.Epoch != h.Epoch || p.Owner != h.From || !s.alive(p.Next) {
			continue
		}
		pins = append(pins, pinOp{Sandbox: sb, Expect: p.Epoch})
	}
	if len(moves) > 0 {
		if err := n.apply(ctx, encodeCompleteHandoff(moves)); err != nil {
			return 0, err
		}
	}
	if len(pins) > 0 {
		if err := n.apply(ctx, encodePinMove(pinOpComplete, pins)); err != nil {
			return len(moves), err
		}
	}
	return len(moves) + len(pins), nil
}
