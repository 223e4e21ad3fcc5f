package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestDrainUnderLoad drains a follower of a 3-node cluster while samplers admit
// sandboxes of every node, with a quarter of the partitions busy. Its heartbeats are
// still granted while it drains; every one of its partitions, busy ones included,
// moves by a handoff it is told of; it ends owning nothing, still a
// draining member; no sandbox is admitted by two nodes at once, and every replica
// agrees on the table. It reports how long the drain took at 1000 partitions/s.
func TestDrainUnderLoad(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	const rate = 1000
	var busyOn atomic.Bool
	busy := func(p int) bool { return busyOn.Load() && p%4 == 0 }
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.RebalanceRate = rate
		cfg.Busy = busy
		r.use(cfg)
	})
	victim := h.follower(8)
	var mine []int
	for p, a := range victim.Table() {
		if a.Owner == victim.ID() {
			mine = append(mine, p)
		}
	}
	sandboxes := sandboxesOf(h.nodes, 8)
	rec := record(h.nodes, sandboxes)
	waitFor(t, "every node to admit its sandboxes", func() bool {
		for _, nd := range h.nodes {
			if !rec.admitted(ownedUpTo(nd, 8), nd) {
				return false
			}
		}
		return true
	})
	busyOn.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := onLeader(t, h.nodes, func(l *Node) error { return l.Drain(ctx, "nobody") }); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("Drain of a stranger: %v", err)
	}
	// On a follower, Drain names the leader (unless leadership moved onto it).
	if f := h.others(leader(t, h.nodes...))[0]; !f.IsLeader() {
		if err := f.Drain(ctx, victim.ID()); err == nil {
			t.Log("leadership moved during the check; nothing to assert")
		} else if _, ok := LeaderOf(err); !ok {
			t.Fatalf("Drain on a follower: %v", err)
		}
	}
	start := mono()
	if err := onLeader(t, h.nodes, func(l *Node) error { return l.Drain(ctx, victim.ID()) }); err != nil {
		t.Fatal(err)
	}
	// A draining member that still owns partitions keeps its lease.
	err := onLeader(t, h.nodes, func(l *Node) error {
		if !l.fsm.cur.Load().owns(victim.ID()) {
			return nil // the drain got there first; nothing to ask
		}
		if l == victim { // a leader renews its own lease through the log
			if err := l.renewOwnLease(ctx); err != nil {
				return err
			}
			if ok, _ := l.Lease(); !ok {
				return fmt.Errorf("a draining leader's own lease was not renewed")
			}
			return nil
		}
		v, _ := l.grant(victim.ID(), l.now())
		l.live.mu.Lock()
		ready := l.live.ready && l.live.term == l.raft.CurrentTerm() && !l.live.failing[victim.ID()]
		l.live.mu.Unlock()
		switch {
		case v == verdictGranted:
			return nil
		case v == verdictNotLeader || (v == verdictRetry && !ready):
			return ErrNotLeader // a leadership starting or ending: ask again
		default:
			return fmt.Errorf("a draining member's heartbeat was not granted: verdict %d", v)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := onLeader(t, h.nodes, func(l *Node) error { return l.Drain(ctx, victim.ID()) }); err != nil {
		t.Fatalf("Drain again: %v", err)
	}
	waitDrained(t, h.nodes, victim.ID())
	took := mono() - start
	for _, m := range leader(t, h.nodes...).Members() {
		if m.ID == victim.ID() && (m.Status != StatusDraining || m.Status.String() != "draining") {
			t.Fatalf("drained member is %s", m.Status)
		}
	}
	told := r.get()
	var handed []int
	for _, x := range told {
		if x.h.From == victim.ID() && x.at >= start {
			handed = append(handed, x.h.Partitions...)
		}
	}
	slices.Sort(handed)
	if !slices.Equal(handed, mine) {
		t.Fatalf("told of %d handoffs of the %d partitions it owned", len(handed), len(mine))
	}
	busyMoved := 0
	for _, p := range mine {
		if busy(p) {
			busyMoved++
		}
	}
	waitFor(t, "the others to admit the drained member's sandboxes", func() bool {
		for _, sb := range sandboxes {
			o, _, ok := h.nodes[0].Owner(sb)
			if !ok || o == victim.ID() || byID(h.nodes, o).Admit(sb) != nil {
				return false
			}
		}
		return true
	})
	rec.finish(t, h)
	h.checkTables(t)
	t.Logf("drained %d partitions (%d busy) in %v at %d/s", len(mine), busyMoved, took, rate)
}

// TestRollingRestart restarts every node of a 3-node cluster in turn under load:
// drain, close, open again with the same id, data directory and address, join
// again. No sandbox is admitted by two nodes at once, the replicas agree, every
// node ends alive with its partitions back, and the voter set is the same three
// nodes everywhere.
func TestRollingRestart(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) { r.use(cfg) })
	sandboxes := sandboxesOf(h.nodes, 6)
	rec := record(h.nodes, sandboxes)
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	restarted := map[NodeID]time.Duration{}
	for i := range h.nodes {
		nd := h.nodes[i]
		restarted[nd.ID()] = mono()
		if err := onLeader(t, h.nodes, func(l *Node) error { return l.Drain(ctx, nd.ID()) }); err != nil {
			t.Fatal(err)
		}
		waitDrained(t, h.nodes, nd.ID())
		down := mono()
		again := reopen(t, nd)
		h.nodes[i] = again
		rec.add(again, sandboxes)
		joinVia(t, h.nodes, again)
		waitFor(t, string(nd.ID())+" back, with its partitions", func() bool {
			l := leader(t, h.nodes...)
			ok, _ := again.Lease()
			return ok && placed(l, h.nodes...) && sameTable(h.nodes...)
		})
		t.Logf("%s drained, restarted and placed again in %v", nd.ID(), mono()-down)
	}
	// Each node got its partitions back by handoffs from the others.
	back := map[NodeID]int{}
	for _, x := range r.get() {
		if x.at > restarted[x.h.To] {
			back[x.h.To] += len(x.h.Partitions)
		}
	}
	for _, nd := range h.nodes {
		if back[nd.ID()] == 0 {
			t.Fatalf("no partition handed to %s", nd.ID())
		}
	}
	waitFor(t, "the same three voters everywhere", func() bool {
		var want []string
		for _, nd := range h.nodes {
			f := nd.raft.GetConfiguration()
			if f.Error() != nil {
				return false
			}
			var got []string
			for _, s := range f.Configuration().Servers {
				got = append(got, string(s.ID)+"/"+s.Suffrage.String())
			}
			slices.Sort(got)
			if want == nil {
				want = got
			}
			if !slices.Equal(got, want) || len(got) != 3 || voters(nd) != 3 {
				return false
			}
		}
		return true
	})
	rec.finish(t, h)
	h.checkTables(t)
}
