package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countGate is a gate (Config.BeforeBatches) that also counts the batch entries its
// replica reached: an empty write through the log is one of them.
type countGate struct {
	gate
	n atomic.Int64
}

func (g *countGate) wait(i uint64) {
	g.n.Add(1)
	g.gate.wait(i)
}

// countGated starts a 3-node cluster whose replicas can each be held behind and
// count their batch entries, and waits until every node holds a lease. Raft runs at
// half its default timeouts rather than the package's tenth, and leases last 10 s:
// a spurious election (which could make the held replica lead) or a lease renewed
// after it lapsed (which syncs through the log) would get in the way.
func countGated(tb testing.TB) ([]*Node, []*countGate) {
	tb.Helper()
	gates := []*countGate{{}, {}, {}}
	nodes := clusterWith(tb, 3, func(i int, cfg *Config) {
		cfg.BeforeBatches = gates[i].wait
		cfg.Multiplier = 0.5
		cfg.LeaseTTL, cfg.LeaseMargin = 10*time.Second, time.Second
	})
	tb.Cleanup(func() { // before the nodes close (cleanups run last first)
		for _, g := range gates {
			g.open()
		}
	})
	waitFor(tb, "every node to hold a lease", func() bool {
		for _, nd := range nodes {
			if ok, _ := nd.Lease(); !ok {
				return false
			}
		}
		return true
	})
	return nodes, gates
}

// TestReadBarrierWaitsForLaggingReplica: a follower held before a committed write
// does not pass ReadBarrier (it would answer from before the write); once let go it
// does, sees the write, and the barrier wrote nothing to the log (no batch entry
// reached any replica): the leader's commit index, not an empty write, told it how
// far to go.
func TestReadBarrierWaitsForLaggingReplica(t *testing.T) {
	nodes, gates := countGated(t)
	l := leader(t, nodes...)
	f, fg := nodes[0], gates[0]
	if f == l {
		f, fg = nodes[1], gates[1]
	}
	const sb = "rb-lag"
	fg.shut()
	mustWrite(t, l, sb, "k", "v")

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	wrote, err := f.ReadBarrier(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadBarrier on %s held before a committed write: wrote %v, err %v; want the deadline", f.ID(), wrote, err)
	}
	fg.open()

	// An election under load makes the barrier fall back to a write: try again
	// then, the property is about the path without one.
	waitFor(t, "a ReadBarrier through a read index", func() bool {
		before := make([]int64, len(gates))
		for i, g := range gates {
			before[i] = g.n.Load()
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		wrote, err := f.ReadBarrier(ctx)
		if err != nil {
			t.Fatalf("ReadBarrier on %s: %v", f.ID(), err)
		}
		if wrote {
			t.Logf("ReadBarrier on %s fell back to a write (a leadership change?); again", f.ID())
			return false
		}
		for i, g := range gates {
			if d := g.n.Load() - before[i]; d != 0 {
				t.Fatalf("ReadBarrier through a read index: %s applied %d batch entries meanwhile, want none", nodes[i].ID(), d)
			}
		}
		return true
	})
	if got := get(t, f, sb, "k"); got != "v" {
		t.Fatalf("%s after ReadBarrier reads k=%s, want v", f.ID(), got)
	}
	// The leader itself: the same rule, no connection.
	ctx, cancel = context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := l.ReadBarrier(ctx); err != nil && l.IsLeader() {
		t.Fatalf("ReadBarrier on the leader %s: %v", l.ID(), err)
	}
}

// TestReadBarrierNewLeaderFallsBack: a new leader that has not committed an entry of
// its own term (its replica is held before an earlier entry, so its Barrier cannot
// finish) may have a commit index behind what the old leader committed, so it gives
// no read index: a follower's ReadBarrier falls back to the empty write, which
// commits under the new leader, and returns only once that is applied.
func TestReadBarrierNewLeaderFallsBack(t *testing.T) {
	nodes, gates := countGated(t)
	old := leader(t, nodes...)
	var next, f *Node
	var ng *countGate
	for i, nd := range nodes {
		switch {
		case nd == old:
		case next == nil:
			next, ng = nd, gates[i]
		default:
			f = nd
		}
	}
	ng.shut()
	mustWrite(t, old, "rb-new", "k", "v")
	waitFor(t, string(next.ID())+" to lead", func() bool {
		if next.IsLeader() {
			return true
		}
		l := leader(t, nodes...)
		if err := l.raft.LeadershipTransferToServer(raft.ServerID(next.ID()), raft.ServerAddress(next.RaftAddr())).Error(); err != nil {
			t.Logf("transfer leadership from %s to %s: %v (again)", l.ID(), next.ID(), err)
		}
		return next.IsLeader()
	})
	waitFor(t, string(f.ID())+" to follow "+string(next.ID()), func() bool {
		id, _ := f.Leader()
		return id == next.ID()
	})
	// The new leader's first entries (a no-op, its Barrier) are in its log once its
	// last entry is the Barrier; the next one is the follower's write.
	var barrier uint64
	waitFor(t, string(next.ID())+"'s barrier in its log", func() bool {
		var e raft.Log
		barrier = next.raft.LastIndex()
		return next.store.GetLog(barrier, &e) == nil && e.Type == raft.LogBarrier
	})
	if next.live.readyIn(next.raft.CurrentTerm()) {
		t.Fatalf("%s is ready to lead with its replica held before an entry of the last term", next.ID())
	}

	type result struct {
		wrote bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		wrote, err := f.ReadBarrier(ctx)
		done <- result{wrote, err}
	}()
	waitFor(t, string(f.ID())+"'s empty write in "+string(next.ID())+"'s log", func() bool {
		select {
		case r := <-done:
			t.Fatalf("ReadBarrier on %s returned (wrote %v, err %v) before the new leader %s could vouch for any index", f.ID(), r.wrote, r.err, next.ID())
		default:
		}
		var e raft.Log
		return next.store.GetLog(barrier+1, &e) == nil && e.Type == raft.LogCommand && isBatches(cmdType(e.Data[0]))
	})
	ng.open()
	var r result
	select {
	case r = <-done:
	case <-time.After(patience):
		t.Fatalf("ReadBarrier on %s did not return within %v of the new leader's replica let go", f.ID(), patience)
	}
	if r.err != nil || !r.wrote {
		t.Fatalf("ReadBarrier on %s under a new leader not yet ready: wrote %v, err %v; want the write, nil", f.ID(), r.wrote, r.err)
	}
	if got := get(t, f, "rb-new", "k"); got != "v" {
		t.Fatalf("%s after ReadBarrier reads k=%s, want v", f.ID(), got)
	}
}
