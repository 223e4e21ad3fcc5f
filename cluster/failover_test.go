package cluster

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"
)

// TestIsolatedOwnerFencesFirst cuts a non-leader owner off the network (both ways).
// Safety, asserted strictly: its lease ends at most L after the cut, OnFence comes no
// earlier than that, every replica applies the move of its partitions no earlier than
// its lease's end + δ, and no sampled sandbox is ever admitted by two nodes at once,
// through the cut and the heal. After the heal it sees the new epochs, holds a lease
// again and refuses the sandboxes it lost.
func TestIsolatedOwnerFencesFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 3, nil)
	h.frozen.Store(true) // no rebalance back after the heal (handoff is not built)
	victim := h.follower(8)
	lost := owned(t, victim, 8)
	var kept []string
	for _, nd := range h.others(victim) {
		kept = append(kept, ownedUpTo(nd, 4)...)
	}
	epochs := map[string]uint64{}
	for _, sb := range lost {
		epochs[sb] = victim.Epoch(sb)
	}
	h.moves.arm(victim, lost)
	rec := record(h.nodes, append(append([]string(nil), lost...), kept...))
	waitFor(t, "the victim to admit its sandboxes", func() bool { return rec.admitted(lost, victim) })

	ev := h.events[h.index(victim)]
	_, leases := ev.get()
	cut := mono()
	h.isolate(victim)
	waitFor(t, "the isolated node to fence itself", func() bool { return fencedNow(victim, ev) })
	fences, _ := ev.get()
	fenced := fences[len(fences)-1] // under load the lease may have lapsed just before the cut
	end := time.Duration(victim.lease.until.Load())
	if end > cut+testL {
		t.Fatalf("lease ends %v after the cut, more than L", end-cut)
	}
	if fenced < end {
		t.Fatalf("OnFence %v before the lease ended", end-fenced)
	}
	if late := fenced - end; late > time.Second {
		t.Errorf("OnFence %v after the lease ended", late)
	}
	t.Logf("fenced %v after the cut", fenced-cut)
	if err := victim.Admit(lost[0]); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("Admit on the fenced node = %v", err)
	}

	survivors := h.others(victim)
	var moved time.Duration
	for _, nd := range survivors {
		waitFor(t, string(nd.ID())+" to apply the move", func() bool { _, all := h.moves.times(nd.ID()); return all })
		at, _ := h.moves.times(nd.ID())
		for p, when := range at {
			if when < end+testMargin {
				t.Fatalf("%s moved partition %d %v before the lease's end + δ", nd.ID(), p, end+testMargin-when)
			}
			moved = max(moved, when)
		}
	}
	t.Logf("partitions moved %v after the cut (lease end + δ is %v after it)", moved-cut, end+testMargin-cut)

	healed := mono()
	h.heal(victim)
	waitFor(t, "the healed node to hold a lease again", func() bool { _, l := ev.get(); return len(l) > len(leases) })
	_, l := ev.get()
	t.Logf("victim %s cut at %v, healed at %v, lease again at %v", victim.ID(), cut, healed, l[len(leases)])
	for _, sb := range lost {
		owner, epoch, ok := victim.Owner(sb)
		if !ok || owner == victim.ID() || epoch <= epochs[sb] {
			t.Fatalf("healed node sees %s at %s epoch %d (was %d)", sb, owner, epoch, epochs[sb])
		}
		if o, isNot := OwnerOf(victim.Admit(sb)); !isNot || o.Owner != owner {
			t.Fatalf("healed node's Admit(%s): %+v", sb, o)
		}
	}
	waitFor(t, "the healed node to be alive again", func() bool {
		for _, m := range leader(t, h.nodes...).Members() {
			if m.ID == victim.ID() {
				return m.Status == StatusAlive
			}
		}
		return false
	})
	runs := rec.finish(t, h)
	for _, sb := range lost {
		by := map[NodeID]bool{}
		for _, r := range runs[sb] {
			by[r.node] = true
		}
		if !by[victim.ID()] || len(by) < 2 {
			t.Fatalf("sandbox %s admitted only by %v: the recorder saw no failover", sb, by)
		}
	}
}

// TestKilledOwnerFailover closes a non-leader owner. Its partitions move no earlier
// than its last lease's end + δ, and the test reports how long until a survivor first
// admits one of its sandboxes.
func TestKilledOwnerFailover(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 3, nil)
	victim := h.follower(8)
	lost := owned(t, victim, 8)
	h.moves.arm(victim, lost)
	survivors := h.others(victim)
	rec := record(survivors, lost)

	kill := mono()
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	end := time.Duration(victim.lease.until.Load()) // final: the heartbeat loop has stopped
	for _, nd := range survivors {
		waitFor(t, string(nd.ID())+" to apply the move", func() bool { _, all := h.moves.times(nd.ID()); return all })
		at, _ := h.moves.times(nd.ID())
		for p, when := range at {
			if when < end+testMargin {
				t.Fatalf("%s moved partition %d %v before the lease's end + δ", nd.ID(), p, end+testMargin-when)
			}
		}
	}
	waitFor(t, "a survivor to admit every lost sandbox", func() bool {
		for _, sb := range lost {
			if survivors[0].Admit(sb) != nil && survivors[1].Admit(sb) != nil {
				return false
			}
		}
		return true
	})
	runs := rec.finish(t, h)
	first := time.Duration(1 << 62)
	for _, sb := range lost {
		for _, r := range runs[sb] {
			first = min(first, r.from)
		}
	}
	t.Logf("owner killed → first admission elsewhere %v (L + δ = %v, lease ended %v after the kill)",
		first-kill, testL+testMargin, end-kill)
}

// TestLeaderKilledLeasesHold closes the leader. The survivors' leases never lapse
// (L is 2 s here, far past an election under -race on a small loaded machine), so they admit
// their own sandboxes without a single refusal, unless the machine starves the process
// or raft elects over and over; the new leader moves the dead
// leader's partitions no earlier than the dead leader's lease's end + δ, and counts
// its silence from its last lease entry rather than from the new leader's election.
func TestLeaderKilledLeasesHold(t *testing.T) {
	t.Parallel()
	const bigL, bigMargin = 2 * time.Second, 300 * time.Millisecond
	// Raft at 0.4× (200 ms): fewer spurious elections than at 0.1×, whose leaderships
	// in between would leave the survivors no way to trust the victim's lease entry
	// (they would then wait from their own start, which is slower, never unsafe).
	h := newHarness(t, 3, func(cfg *Config) { cfg.LeaseTTL, cfg.LeaseMargin, cfg.Multiplier = bigL, bigMargin, 0.4 })
	var all []string
	for _, nd := range h.nodes {
		all = append(all, ownedUpTo(nd, 8)...)
	}
	rec := record(h.nodes, all)
	for _, nd := range h.nodes {
		waitFor(t, string(nd.ID())+" to admit its sandboxes", func() bool { return rec.admitted(ownedUpTo(nd, 8), nd) })
	}
	// Spurious elections are common here: pick the leader just before the kill, once
	// every node has applied a lease entry of its current term.
	var victim *Node
	waitFor(t, "a leader whose lease entry every node applied", func() bool {
		victim = leader(t, h.nodes...)
		term := victim.Term()
		for _, nd := range h.nodes {
			if l := nd.fsm.leases.get(); l.node != victim.ID() || l.term != term {
				return false
			}
		}
		return victim.IsLeader()
	})
	wasLeader, kill, victimTerm := victim.IsLeader(), mono(), victim.Term()
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	end := time.Duration(victim.lease.until.Load())
	lost := owned(t, victim, 8)
	h.moves.arm(victim, lost)
	survivors := h.others(victim)
	for _, nd := range survivors {
		waitFor(t, string(nd.ID())+" to apply the move", func() bool { _, all := h.moves.times(nd.ID()); return all })
	}
	next, ok := h.leads.firstAfter(kill)
	if !ok || !wasLeader {
		t.Fatalf("no leadership started after the kill (victim leader at the kill: %v)", wasLeader)
	}
	var moved time.Duration
	for _, nd := range survivors {
		at, _ := h.moves.times(nd.ID())
		for p, when := range at {
			if when < end+bigMargin {
				t.Fatalf("%s moved partition %d %v after the kill: before the lease's end + δ (%v)",
					nd.ID(), p, when-kill, end+bigMargin-kill)
			}
			moved = max(moved, when)
		}
	}
	// The leadership that moved them knew when the victim's lease began: it counted
	// from no earlier than that, and no later than its own start.
	floors := h.floors.of(victim.ID())
	var lastTerm uint64 // the survivors' term once the partitions moved
	for _, nd := range survivors {
		lastTerm = max(lastTerm, nd.Term())
	}
	if len(floors) == 0 {
		// Leaderships between the victim's and the one that moved its partitions
		// (spurious elections on a loaded machine) may have committed their
		// barriers, and then nobody may trust the victim's lease entry: counting
		// from their own start is slower, never unsafe. Only the election right
		// after the kill must count from the entry.
		if lastTerm <= victimTerm+1 {
			t.Fatalf("no leadership after the kill counted the dead leader from its last lease entry (term %d, the victim's %d)", lastTerm, victimTerm)
		}
		t.Logf("no floor: %d terms passed after the victim's %d", lastTerm-victimTerm, victimTerm)
	}
	for _, f := range floors {
		if f.at < end-bigL {
			t.Fatalf("%s counted the dead leader from %v before the kill, before its lease began (%v)", f.node, kill-f.at, kill-(end-bigL))
		}
	}
	waitFor(t, "a survivor to admit every lost sandbox", func() bool {
		for _, sb := range lost {
			if survivors[0].Admit(sb) != nil && survivors[1].Admit(sb) != nil {
				return false
			}
		}
		return true
	})
	waitFor(t, "the recorder to see it", func() bool { return rec.admitted(lost, survivors...) })
	runs := rec.finish(t, h)
	for _, sb := range lost {
		if len(runs[sb]) < 2 {
			t.Fatalf("sandbox %s: admission runs %v, want the dead leader's then a survivor's", sb, runs[sb])
		}
	}
	// A liveness claim: the leases held when the leader died all end by kill + L, so
	// a refusal caused by the change comes before that (later ones, from a loaded
	// machine, are not this test's business). It holds when one election follows the
	// kill (two with a split vote) and the process does not starve for a good part of
	// L, which the watchdog measures. A machine loaded enough to make raft elect over
	// and over leaves the survivors without a leader to renew their leases; refusing
	// then is the safe answer, not this claim's failure.
	unsettled := lastTerm > victimTerm+2
	for _, nd := range survivors {
		r := rec.refusals(nd, kill, kill+bigL)
		if len(r) == 0 {
			continue
		}
		if rec.stall > bigL/4 || unsettled {
			t.Logf("%s refused its own sandboxes %v after the kill, but the process stalled for %v and %d terms passed after the victim's: %d times",
				nd.ID(), r[0].at-kill, rec.stall, lastTerm-victimTerm, len(r))
			continue
		}
		t.Errorf("%s refused its own sandboxes while the leader changed, first %v after the kill (%v): %d times", nd.ID(), r[0].at-kill, r[0].err, len(r))
	}
	t.Logf("leader killed → new leader %s after %v; its partitions moved after %v (lease end + δ: %v; the new leader's start + L + δ: %v)",
		next.node, next.since-kill, moved-kill, end+bigMargin-kill, next.since+bigL+bigMargin-kill)
}

// TestPausedHeartbeatsFence stops a node's heartbeat loop (a stalled node) past L:
// Admit refuses its sandboxes, OnFence is called, the leader fails it after L + δ,
// and when heartbeats resume it holds a lease and is alive again, owning nothing
// until a rebalance.
func TestPausedHeartbeatsFence(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 3, nil)
	h.frozen.Store(true)
	victim := h.follower(4)
	lost := owned(t, victim, 4)
	h.moves.arm(victim, lost)
	ev := h.events[h.index(victim)]
	_, leases := ev.get()

	pause := mono()
	victim.hbPaused.Store(true)
	waitFor(t, "the paused node to fence itself", func() bool { return fencedNow(victim, ev) })
	end := time.Duration(victim.lease.until.Load())
	if end > pause+testL {
		t.Fatalf("lease ends %v after the pause, more than L", end-pause)
	}
	// The leader has not failed it yet (δ after the lease), or it has and the node
	// knows: either way the node admits nothing.
	for _, sb := range lost {
		if err := victim.Admit(sb); err == nil {
			t.Fatalf("paused node admitted %s", sb)
		}
	}
	waitFor(t, "the leader to move the paused node's partitions", func() bool { _, all := h.moves.times(victim.ID()); return all })
	at, _ := h.moves.times(victim.ID())
	for p, when := range at {
		if when < end+testMargin {
			t.Fatalf("partition %d moved %v before the lease's end + δ", p, end+testMargin-when)
		}
	}
	victim.hbPaused.Store(false)
	waitFor(t, "a lease and status alive again", func() bool {
		_, l := ev.get()
		m := leader(t, h.nodes...).Members()
		i := sort.Search(len(m), func(i int) bool { return m[i].ID >= victim.ID() })
		return len(l) > len(leases) && i < len(m) && m[i].Status == StatusAlive
	})
	for _, sb := range lost {
		if _, isNot := OwnerOf(victim.Admit(sb)); !isNot {
			t.Fatalf("Admit(%s) after the node came back: %v", sb, victim.Admit(sb))
		}
	}
}

// TestRemovedMemberFencedFirst removes a running member: it is refused heartbeats, so
// its lease runs out, and its partitions move no earlier than that + δ, with no
// overlapping admissions.
//
// It runs on the dead-server tests' 2 s lease: with the 300 ms test lease a loaded
// machine can fail the member by mistake before the removal, and the moves after that
// lapse (safe) would then be measured against the member's later lease. Once the
// member is chosen rebalancing is frozen, so only the removal moves its partitions.
func TestRemovedMemberFencedFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.LeaseTTL, cfg.LeaseMargin, cfg.Multiplier = deadTestL, deadTestMargin, 0.4
	})
	victim := h.follower(8)
	h.frozen.Store(true)
	lost := owned(t, victim, 8)
	h.moves.arm(victim, lost)
	rec := record(h.nodes, lost)
	waitFor(t, "the member to admit its sandboxes", func() bool { return rec.admitted(lost, victim) })

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	waitFor(t, "the member removed", func() bool {
		err := leader(t, h.nodes...).Remove(ctx, victim.ID())
		return err == nil
	})
	survivors := h.others(victim)
	for _, nd := range survivors {
		waitFor(t, string(nd.ID())+" to apply the move", func() bool { _, all := h.moves.times(nd.ID()); return all })
	}
	end := time.Duration(victim.lease.until.Load())
	if ok, _ := victim.Lease(); ok {
		t.Fatal("the removed member still holds a lease after its partitions moved")
	}
	for _, nd := range survivors {
		at, _ := h.moves.times(nd.ID())
		for p, when := range at {
			if when < end+deadTestMargin {
				t.Fatalf("%s moved partition %d %v before the removed member's lease end + δ", nd.ID(), p, end+deadTestMargin-when)
			}
		}
	}
	waitFor(t, "a survivor to admit every lost sandbox", func() bool { return rec.admitted(lost, survivors...) })
	rec.finish(t, h)
}

// fencedNow reports whether nd holds no lease and has called OnFence for the last
// one it held (OnLease and OnFence alternate, starting with OnLease).
func fencedNow(nd *Node, ev *leaseEvents) bool {
	f, l := ev.get()
	ok, _ := nd.Lease()
	return !ok && len(f) == len(l) && len(f) > 0
}
