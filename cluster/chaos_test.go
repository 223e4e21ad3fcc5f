package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Chaos scenarios: partitions that put the leader in a minority, one-sided and
// flapping links, and a slow disk, each under the admission recorder with the
// table checks. Safety is asserted strictly; the cluster is only required to
// converge again once the faults stop.

// converged reports whether every node holds a lease, is alive in the leader's
// table, and every node has the same, placed table.
func converged(tb testing.TB, nodes []*Node) bool {
	l := leader(tb, nodes...)
	for _, nd := range nodes {
		if ok, _ := nd.Lease(); !ok || l.fsm.cur.Load().members[nd.ID()].Status != StatusAlive {
			return false
		}
	}
	return placed(l, nodes...) && sameTable(nodes...)
}

// TestMinorityLeaderAndOwner cuts the leader and another owner off from the other
// three of five nodes. The old leader steps down, both self-fence, the majority
// elects a leader which moves their partitions no earlier than their leases' end +
// δ, and the other owner's no earlier than its own start + L + δ; after the heal the
// cluster converges. No sandbox is admitted by two nodes at once throughout.
func TestMinorityLeaderAndOwner(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	ln := newLinks()
	r := newReporter()
	h := newHarness(t, 5, func(cfg *Config) { ln.use(cfg); r.use(cfg) })
	ln.learn(h.nodes...)
	all := sandboxesOf(h.nodes, 6)
	rec := record(h.nodes, all)
	waitFor(t, "every node to admit its sandboxes", func() bool {
		for _, nd := range h.nodes {
			if !rec.admitted(ownedUpTo(nd, 6), nd) {
				return false
			}
		}
		return true
	})
	// Five members have three voters: the owner cut off with the leader is a
	// non-voter, so that the other side keeps a quorum of voters. Both are chosen
	// just before the cut (spurious elections are common here).
	var old, owner *Node
	waitFor(t, "a leader and a non-voter owner", func() bool {
		old = leader(t, h.nodes...)
		f := old.raft.GetConfiguration()
		if f.Error() != nil {
			return false
		}
		for _, srv := range f.Configuration().Servers {
			nd := byID(h.nodes, NodeID(srv.ID))
			if srv.Suffrage == raft.Nonvoter && nd != nil && len(ownedUpTo(nd, 6)) == 6 {
				owner = nd
				return old.IsLeader()
			}
		}
		return false
	})
	minority := []*Node{old, owner}
	var majority []*Node
	for _, nd := range h.nodes {
		if nd != old && nd != owner {
			majority = append(majority, nd)
		}
	}
	// The minority's partitions, with their owner and epoch at the cut: the newest
	// any replica has.
	was := map[int]NodeID{}
	epochs := map[int]uint64{}
	for _, nd := range h.nodes {
		for p, a := range nd.Table() {
			if a.Epoch >= epochs[p] {
				epochs[p] = a.Epoch
				if a.Owner == old.ID() || a.Owner == owner.ID() {
					was[p] = a.Owner
				} else {
					delete(was, p)
				}
			}
		}
	}

	wasLeader := old.IsLeader()
	cut := mono()
	ln.split(minority, majority)
	waitFor(t, "the old leader to step down", func() bool { return !old.IsLeader() })
	stepped := mono()
	for _, nd := range minority {
		ev := h.events[h.index(nd)]
		waitFor(t, string(nd.ID())+" to fence itself", func() bool { return fencedNow(nd, ev) })
	}
	ends := map[NodeID]time.Duration{}
	for _, nd := range minority {
		ends[nd.ID()] = time.Duration(nd.lease.until.Load())
	}
	waitFor(t, "the majority to take the minority's partitions", func() bool {
		for _, nd := range majority {
			for p, from := range was {
				if a := nd.Partition(p); a.Owner == from || a.State != PartitionActive {
					return false
				}
			}
		}
		return true
	})
	next, ok := h.leads.firstAfter(cut)
	if !ok && wasLeader {
		t.Fatal("no leadership began after the cut")
	}
	for _, nd := range majority {
		for p, from := range was {
			at, _, seen := h.firstSeen(nd.ID(), func(s *state) bool { a := s.parts[p]; return a.Owner != from && a.Epoch > epochs[p] })
			if !seen {
				t.Fatalf("%s: no state of partition %d off %s past epoch %d; now %+v; history:%s", nd.ID(), p, from, epochs[p], nd.Partition(p), h.historyOf(p))
			}
			// The old leader's own lease is in the log: the new leader may count its
			// silence from its last lease entry. The other owner's it must wait out
			// from its own start.
			early := ok && from != old.ID() && at < next.since+testL+testMargin
			if at < ends[from]+testMargin || early {
				t.Fatalf("%s moved partition %d of %s %v after the cut: before its lease end + δ (%v) or the new leader's L + δ (%v)",
					nd.ID(), p, from, at-cut, ends[from]+testMargin-cut, next.since+testL+testMargin-cut)
			}
		}
	}
	t.Logf("old leader (leading at the cut: %v) stepped down %v after the cut; new leader %s after %v; leases of the minority ended %v and %v after it; %d of their partitions watched",
		wasLeader, stepped-cut, next.node, next.since-cut, ends[old.ID()]-cut, ends[owner.ID()]-cut, len(was))

	ln.healAll()
	waitFor(t, "the cluster to converge after the heal", func() bool { return converged(t, h.nodes) })
	rec.finish(t, h)
	h.checkTables(t)
}

// TestAsymmetricAndFlappingLinks blocks the leader's connections to one follower
// while that follower can still reach the leader, then flaps single links one way
// or the other every 50-200 ms. No sandbox is admitted by two nodes at once, and
// the cluster converges once the links are healed.
func TestAsymmetricAndFlappingLinks(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	ln := newLinks()
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) { ln.use(cfg); r.use(cfg) })
	ln.learn(h.nodes...)
	rec := record(h.nodes, sandboxesOf(h.nodes, 6))
	waitFor(t, "every node to admit its sandboxes", func() bool {
		for _, nd := range h.nodes {
			if !rec.admitted(ownedUpTo(nd, 6), nd) {
				return false
			}
		}
		return true
	})
	l := leader(t, h.nodes...)
	f := h.others(l)[0]
	ln.set(l, f, true)
	fault := time.NewTimer(5 * testL) // how long the fault lasts: a schedule, not a wait for an event
	<-fault.C
	ln.healAll()

	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	end := time.Now().Add(10 * testL)
	flips := 0
	for time.Now().Before(end) {
		a := h.nodes[rng.IntN(len(h.nodes))]
		b := h.others(a)[rng.IntN(len(h.nodes)-1)]
		ln.set(a, b, rng.IntN(2) == 0)
		flips++
		pause := time.NewTimer(time.Duration(50+rng.IntN(151)) * time.Millisecond)
		<-pause.C
	}
	ln.healAll()
	waitFor(t, "the cluster to converge after the heal", func() bool { return converged(t, h.nodes) })
	rec.finish(t, h)
	h.checkTables(t)
	t.Logf("%d link flips", flips)
}

// TestSlowDisk slows a follower's log store, then the leader's, by 5-50 ms a write,
// while leader-only calls (pins) are made and retried through leadership changes.
// A call that failed indeterminately and is retried never applies twice: a pin
// never changes epoch without changing owner. No sandbox is admitted by two nodes at
// once, and the cluster converges once the disks are fast again.
func TestSlowDisk(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) { r.use(cfg) })
	rec := record(h.nodes, sandboxesOf(h.nodes, 6))
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	var pinned []string
	indeterminate := 0
	pinOne := func(sb string) {
		pinned = append(pinned, sb)
		err := onLeader(t, h.nodes, func(l *Node) error {
			_, err := l.Pin(ctx, sb, nil)
			if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrStaleEpoch) {
				indeterminate++
			}
			return err
		})
		if err != nil {
			t.Fatalf("pin %s: %v", sb, err)
		}
	}
	slow := []*Node{h.follower(1), leader(t, h.nodes...)}
	for i, nd := range slow {
		nd.store.slowDisk().Store(int64(50 * time.Millisecond))
		for j := 0; j < 15; j++ {
			// New sandboxes: a pin places a sandbox at its creation; pinning one
			// that already runs on its partition's owner is a move without handoff.
			pinOne(fmt.Sprintf("slow-%d-%d", i, j))
		}
		nd.store.slowDisk().Store(0)
	}
	waitFor(t, "the cluster to converge", func() bool { return converged(t, h.nodes) })
	rec.finish(t, h)
	h.checkTables(t)
	h.histMu.Lock()
	defer h.histMu.Unlock()
	for id, hist := range h.hist {
		last := map[string]pin{}
		for _, e := range hist {
			for _, sb := range pinned {
				p, ok := e.s.pins[sb]
				if !ok {
					continue
				}
				if q, seen := last[sb]; seen && q.Epoch != p.Epoch && q.Owner == p.Owner && q.State == p.State {
					t.Fatalf("%s: pin of %s applied again at epoch %d with the same owner %s (was %d)", id, sb, p.Epoch, p.Owner, q.Epoch)
				}
				last[sb] = p
			}
		}
	}
	t.Logf("%d pins under a slow disk, %d attempts failed on leadership or a stale read and were retried", len(pinned), indeterminate)
}
