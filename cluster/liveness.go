package cluster

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The leader's side of leases: confirming heartbeats, remembering when each member was
// last heard, and failing members that went silent.
//
// Safety rests on three rules, argued in the package doc:
//   - a heartbeat is granted only after a VerifyLeader begun after it arrived, so
//     every lease a node holds was vouched for by a quorum after it was asked for;
//   - a partition leaves its owner only once that owner has been silent for L + δ,
//     counted from its last granted heartbeat's arrival or from when this node became
//     leader, whichever is later (so a new leader waits L + δ first), except for the
//     previous leader when this node knows when that one last renewed its own lease
//     (leaderlease.go): its count starts from then;
//   - a grant carries the index of the leader's table, and a member being failed, or
//     not alive and still owning something, is not granted until the entry that
//     moves its partitions is applied, so no renewed lease rests on a stale table.

// liveness is the leader's record of heartbeats, reset at each leadership gain.
type liveness struct {
	mu    sync.Mutex
	ready bool          // leading, and the barrier of this term is done
	term  uint64        // the raft term of that barrier
	since time.Duration // when this node became leader (mono)
	// floors replace since for the members named: the previous leader, counted from
	// this replica's apply of its last lease entry (see previousLease).
	floors  map[NodeID]time.Duration
	heard   map[NodeID]time.Duration // arrival of each member's last granted heartbeat
	failing map[NodeID]bool          // members whose fail entry is being committed
	// beat holds the members that had a heartbeat granted in this leadership: raft
	// reached them (they know the leader) and they passed the node handshake both
	// ways. Only they are promoted to voter.
	beat map[NodeID]bool
	// prev is this node's last leadership that reached its barrier, as it stopped:
	// resume takes it up again when no other leadership came between.
	prev *heardRecord
}

// heardRecord is what a leadership knew of every lease: see liveness.
type heardRecord struct {
	term          uint64
	since         time.Duration
	floors, heard map[NodeID]time.Duration
}

// start resets the record for a new leadership that began at now.
func (l *liveness) start(now time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ready, l.term, l.since = false, 0, now
	l.heard = map[NodeID]time.Duration{}
	l.floors = map[NodeID]time.Duration{}
	l.failing = map[NodeID]bool{}
	l.beat = map[NodeID]bool{}
}

// hasBeat reports whether id had a heartbeat granted in this leadership.
func (l *liveness) hasBeat(id NodeID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beat[id]
}

// setReady marks the leadership of term current: its barrier has applied every
// earlier entry, so grants from now on carry an index covering them.
func (l *liveness) setReady(term uint64) {
	l.mu.Lock()
	l.ready, l.term = true, term
	l.mu.Unlock()
}

// floor counts id as heard at at rather than at the leadership's start: every lease
// it may hold ends by at + L.
func (l *liveness) floor(id NodeID, at time.Duration) {
	l.mu.Lock()
	if l.floors != nil {
		l.floors[id] = at
	}
	l.mu.Unlock()
}

// stop ends the leadership: no grants until the next start and barrier. A leadership
// that was ready is kept for resume: every grant it made is in its record.
func (l *liveness) stop() {
	l.mu.Lock()
	if l.ready {
		l.prev = &heardRecord{term: l.term, since: l.since, floors: l.floors, heard: l.heard}
	}
	l.ready = false
	l.mu.Unlock()
}

// resume takes up the record of this node's leadership of term prev, if it kept one:
// a new leadership that knows no other granted a lease since (see countFromLog) may
// count every member as that one did, from its start, its floors and the heartbeats
// it granted. It reports whether it did.
func (l *liveness) resume(prev uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.prev
	if p == nil || p.term != prev || l.heard == nil {
		return false
	}
	l.since = min(l.since, p.since)
	for id, at := range p.floors {
		l.floors[id] = at
	}
	for id, at := range p.heard {
		l.heard[id] = max(l.heard[id], at)
	}
	return true
}

// touch counts a member as heard at now (a member that just joined).
func (l *liveness) touch(id NodeID, now time.Duration) {
	l.mu.Lock()
	if l.heard != nil && now > l.heard[id] {
		l.heard[id] = now
	}
	l.mu.Unlock()
}

// silentLocked is how long id has not been heard, counting from the leadership's
// start (or id's floor) at most.
func (l *liveness) silentLocked(id NodeID, now time.Duration) time.Duration {
	from, ok := l.floors[id]
	if !ok {
		from = l.since
	}
	return now - max(l.heard[id], from)
}

// silent returns how long id has not been heard in this leadership (0 before the
// leadership's barrier is done: nobody counts as gone then).
func (l *liveness) silent(id NodeID, now time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready {
		return 0
	}
	return l.silentLocked(id, now)
}

// movable reports whether every lease id may hold has run out: it has been silent
// for longer than grace.
func (l *liveness) movable(id NodeID, now, grace time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready && l.silentLocked(id, now) > grace
}

// beginFail claims id for failing if it has been silent for longer than grace; no
// heartbeat of id is granted until endFail.
func (l *liveness) beginFail(id NodeID, now, grace time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready || l.failing[id] || l.silentLocked(id, now) <= grace {
		return false
	}
	l.failing[id] = true
	return true
}

func (l *liveness) endFail(id NodeID) {
	l.mu.Lock()
	delete(l.failing, id)
	l.mu.Unlock()
}

// nextDeadline returns how long until the next member (heard or counted from the
// leadership's start) has been silent for longer than grace, or an hour when none is
// due; deadlines already past are not counted (their members are failed or being
// retried at the next tick).
func (l *liveness) nextDeadline(now, grace time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := time.Hour
	consider := func(at time.Duration) {
		if d := at + grace + time.Millisecond - now; d > 0 && d < next {
			next = d
		}
	}
	consider(l.since)
	for _, f := range l.floors {
		consider(f)
	}
	for _, h := range l.heard {
		consider(h)
	}
	return next
}

// recent reports whether id had a heartbeat granted within the last window.
func (l *liveness) recent(id NodeID, now, window time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.heard[id]
	return ok && now-h < window
}

// grace is L + δ: how long the leader waits before it moves a silent member's
// partitions.
func (n *Node) grace() time.Duration { return n.cfg.LeaseTTL + n.cfg.LeaseMargin }

// movable reports whether a member's partitions may be given away now.
func (n *Node) movable(id NodeID) bool { return n.live.movable(id, n.now(), n.grace()) }

// grant decides on a heartbeat of node id that arrived at arrival. It returns the
// verdict and, when granted, the index the node's replica must reach first; verdict 0
// means this node is closing.
func (n *Node) grant(id NodeID, arrival time.Duration) (verdict, uint64) {
	if n.ctx.Err() != nil {
		return 0, 0
	}
	if !n.IsLeader() {
		return verdictNotLeader, 0
	}
	if id == n.cfg.NodeID {
		return verdictRetry, 0 // a leader's own lease is renewed through the log only
	}
	if !n.verifyLeader() {
		if n.ctx.Err() != nil {
			return 0, 0
		}
		return verdictNotLeader, 0
	}
	term := n.raft.CurrentTerm()
	l := &n.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready && !l.failing[id] && l.heard != nil && arrival > l.heard[id] {
		// Not granted, but the member is alive: counting it heard only delays moving
		// its partitions, and gives a member that led before this leadership (and
		// is counted from its last lease entry) time to be granted once it is ready.
		l.heard[id] = arrival
	}
	if !l.ready || l.term != term || l.failing[id] {
		return verdictRetry, 0
	}
	s := n.fsm.cur.Load() // after the checks above: see the third rule
	m, ok := s.members[id]
	switch {
	case !ok || m.Status == StatusLeft:
		return verdictRefused, 0
	case m.Status != StatusAlive && m.Status != StatusDraining && s.owns(id):
		return verdictRetry, 0
	}
	if arrival > l.heard[id] {
		l.heard[id] = arrival
	}
	l.beat[id] = true
	return verdictGranted, s.index
}

// verifier batches VerifyLeader calls: each round serves every request that was
// waiting when it began, so one round trip to a quorum confirms many heartbeats and
// none is confirmed by a round that began before it arrived.
type verifier struct {
	mu      sync.Mutex
	waiting []chan bool
	wake    chan struct{} // buffered 1
}

// verifyLeader waits for a VerifyLeader begun after the call, and reports whether
// this node was still the leader.
func (n *Node) verifyLeader() bool {
	ch := make(chan bool, 1)
	n.ver.mu.Lock()
	n.ver.waiting = append(n.ver.waiting, ch)
	n.ver.mu.Unlock()
	select {
	case n.ver.wake <- struct{}{}:
	default:
	}
	select {
	case ok := <-ch:
		return ok
	case <-n.ctx.Done():
		return false
	}
}

// verifyLoop runs the verification rounds on one goroutine.
func (n *Node) verifyLoop() {
	defer n.verifying.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.ver.wake:
		}
		n.ver.mu.Lock()
		batch := n.ver.waiting
		n.ver.waiting = nil
		n.ver.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		ok := n.verifyRound()
		for _, ch := range batch {
			ch <- ok
		}
	}
}

// verifyRound runs one VerifyLeader and waits at most L for it, so heartbeats are
// refused rather than held when a verification is slow. raft futures cannot be
// cancelled, so the call runs on a helper goroutine counted in n.verifying: Close
// waits for it before shutting raft down, since raft answers a verification in
// flight only while it runs (as leader within its leader lease, at once otherwise).
func (n *Node) verifyRound() bool {
	res := make(chan bool, 1)
	n.verifying.Add(1)
	go func() {
		defer n.verifying.Done()
		res <- n.raft.VerifyLeader().Error() == nil
	}()
	t := time.NewTimer(n.cfg.LeaseTTL)
	defer t.Stop()
	select {
	case ok := <-res:
		return ok
	case <-t.C:
		n.log.Warn("cluster: leader verification took longer than the lease; heartbeats not granted")
		return false
	case <-n.ctx.Done():
		return false
	}
}

// checkLiveness is the leader's liveness pass: it fails each alive member silent for
// longer than L + δ, marking it down and moving its partitions in one entry, and
// brings back down members that heartbeat again (they get partitions back through
// the rate-limited rebalance only).
func (n *Node) checkLiveness(ctx context.Context) {
	for _, id := range aliveIDs(n.fsm.cur.Load()) {
		if !n.live.beginFail(id, n.now(), n.grace()) {
			continue
		}
		err := n.failMember(ctx, id)
		n.live.endFail(id)
		if err != nil {
			n.log.Warn("cluster: failed to mark a silent member down", "node", id, "err", err)
			return
		}
	}
	s := n.fsm.cur.Load()
	for _, id := range sortedIDs(s) {
		if s.members[id].Status != StatusDown || !n.live.recent(id, n.now(), n.cfg.LeaseTTL) {
			continue
		}
		if err := n.apply(ctx, encodeSetStatus(id, StatusAlive)); err != nil {
			n.log.Warn("cluster: failed to mark a member alive again", "node", id, "err", err)
			return
		}
		n.log.Info("cluster: member heartbeats again", "node", id)
	}
}

// failMember commits the entry that marks id down and moves its partitions (and any
// other orphan past its lease) to the alive members.
func (n *Node) failMember(ctx context.Context, id NodeID) error {
	down, err := n.fsm.cur.Load().setStatus(id, StatusDown)
	if err != nil {
		return err
	}
	moves, _, _ := planFenced(down, 0, nil, n.movable)
	if err := n.apply(ctx, encodeFail(id, moves)); err != nil {
		return err
	}
	n.log.Warn("cluster: member silent past its lease; marked down", "node", id, "moved", len(moves))
	return nil
}

// sortedIDs returns every member's id in order.
func sortedIDs(s *state) []NodeID {
	ids := make([]NodeID, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
