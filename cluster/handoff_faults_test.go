package cluster

import (
	"testing"
	"time"
)

// Handoffs under faults: the leader killed in the middle of one, the target dead,
// the old owner restarted.

// TestLeaderKilledDuringHandoff closes the leader between BeginHandoff and
// CompleteHandoff (the old owner has not reported), handing off a follower's
// partitions or the leader's own. The new leader completes the handoff no earlier
// than L + δ after its leadership began; at the end exactly one node owns each
// partition on every survivor, the epochs grew, and no sandbox was admitted twice.
func TestLeaderKilledDuringHandoff(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go); its two cases run side by side.
	tests := []struct {
		name       string
		fromLeader bool
	}{
		{name: "from a follower"},
		{name: "from the leader", fromLeader: true},
	}
	// A lease of 2 s and raft timers at 0.4: under a loaded machine's stalls the
	// default 300 ms lease lapsed again and again, and in one CI run the owner did
	// not admit its sandboxes within 30 s.
	const slowL, slowMargin = 2 * time.Second, 300 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReporter()
			h := newHarness(t, 3, func(cfg *Config) {
				cfg.LeaseTTL, cfg.LeaseMargin, cfg.Multiplier = slowL, slowMargin, 0.4
				r.use(cfg)
			})
			h.frozen.Store(true)
			r.hold.Store(true) // no report: the old owner is still stopping its sandboxes
			l := leader(t, h.nodes...)
			from := l
			if !tt.fromLeader {
				from = h.follower(8)
				l = leader(t, h.nodes...)
			}
			var to *Node
			for _, nd := range h.nodes {
				if nd != from && nd != l {
					to = nd
				}
			}
			if to == nil {
				to = h.others(from)[0]
			}
			sandboxes := owned(t, from, 8)
			ps := partitionsOf(sandboxes)
			rec := record(h.nodes, sandboxes)
			waitFor(t, "the owner to admit its sandboxes", func() bool { return rec.admitted(sandboxes, from) })
			before := from.Partition(ps[0]).Epoch
			epoch := beginHandoffs(t, h.nodes, from.ID(), to.ID(), ps)
			victim := leader(t, h.nodes...)
			kill := mono()
			if err := victim.Close(); err != nil {
				t.Fatal(err)
			}
			survivors := h.others(victim)
			waitFor(t, "the partitions to be active somewhere on every survivor", func() bool {
				for _, nd := range survivors {
					for _, p := range ps {
						if a := nd.Partition(p); a.State != PartitionActive || a.Epoch <= epoch {
							return false
						}
					}
				}
				return sameTable(survivors...)
			})
			for _, p := range ps {
				a := survivors[0].Partition(p)
				if a.Owner == victim.ID() || a.Owner == "" {
					t.Fatalf("partition %d ends on %q", p, a.Owner)
				}
				if !(before < epoch && epoch < a.Epoch) {
					t.Fatalf("partition %d epochs %d → %d → %d", p, before, epoch, a.Epoch)
				}
			}
			next, ok := h.leads.firstAfter(kill)
			if !ok {
				t.Fatal("no leadership after the kill")
			}
			for _, nd := range survivors {
				done, _, _ := h.firstSeen(nd.ID(), func(s *state) bool { return s.parts[ps[0]].Epoch > epoch })
				if done < next.since+slowL+slowMargin {
					t.Fatalf("%s applied the completion %v after the new leadership began, before L + δ", nd.ID(), done-next.since)
				}
			}
			waitFor(t, "each sandbox's new owner to admit it", func() bool {
				for _, sb := range sandboxes {
					o, _, _ := survivors[0].Owner(sb)
					if h.nodes[h.index(byID(survivors, o))].Admit(sb) != nil {
						return false
					}
				}
				return true
			})
			rec.finish(t, h)
			h.checkTables(t)
		})
	}
}

// TestHandoffTargetLeaves: when the target of a handoff dies before the handoff
// completes, the leader fails it and aborts the handoff, which gives the partitions
// back to the old owner at a new epoch; the old owner admits again, and no sandbox
// is admitted by two nodes at once.
func TestHandoffTargetLeaves(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go). Lease and timers as in
	// TestLeaderKilledDuringHandoff, for the same reason.
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.LeaseTTL, cfg.LeaseMargin, cfg.Multiplier = 2*time.Second, 300*time.Millisecond, 0.4
		r.use(cfg)
	})
	h.frozen.Store(true)
	r.hold.Store(true) // no report: only the leader can end the handoff
	var from, to *Node
	waitFor(t, "an owner and a target that are followers", func() bool {
		l := leader(t, h.nodes...)
		o := h.others(l)
		from, to = o[0], o[1]
		return len(ownedUpTo(from, 8)) == 8
	})
	sandboxes := owned(t, from, 8)
	ps := partitionsOf(sandboxes)
	rec := record(h.nodes, sandboxes)
	waitFor(t, "the owner to admit its sandboxes", func() bool { return rec.admitted(sandboxes, from) })
	if err := to.Close(); err != nil {
		t.Fatal(err)
	}
	// The target is still alive in the table until its lease has run out, so the
	// handoff begins; the leader fails the target before the handoff is due.
	epoch := beginHandoffs(t, h.nodes, from.ID(), to.ID(), ps)
	survivors := h.others(to)
	waitFor(t, "the partitions back on the old owner", func() bool {
		for _, p := range ps {
			for _, nd := range survivors {
				if a := nd.Partition(p); a.State != PartitionActive || a.Epoch <= epoch {
					return false
				}
			}
		}
		return true
	})
	for _, p := range ps {
		// The next state of the partition after the handoff is the abort's: back
		// on the old owner, never on the dead target.
		_, s, _ := h.firstSeen(from.ID(), func(s *state) bool { return s.parts[p].Epoch > epoch })
		if a := s.parts[p]; a.Owner != from.ID() || a.State != PartitionActive {
			t.Fatalf("partition %d after the handoff: %+v, not back on %s", p, a, from.ID())
		}
	}
	waitFor(t, "the old owner to admit its sandboxes again", func() bool {
		for _, sb := range sandboxes {
			if from.Admit(sb) != nil {
				return false
			}
		}
		return true
	})
	rec.finish(t, h)
	h.checkTables(t)
}

// TestHandoffSurvivesRestart restarts the old owner while its hook holds a handoff:
// the reopened node finds the handoff in its replayed table, is told of it again,
// and reports it once the hook returns, well before the leader would complete it
// unreported (L + δ is 3.5 s here).
func TestHandoffSurvivesRestart(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	const bigL, bigMargin = 3 * time.Second, 500 * time.Millisecond
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.LeaseTTL, cfg.LeaseMargin = bigL, bigMargin
		r.use(cfg)
	})
	h.frozen.Store(true)
	r.hold.Store(true)
	from := h.follower(4)
	to := h.others(from)[0]
	ps := partitionsOf(owned(t, from, 4))
	epoch := beginHandoffs(t, h.nodes, from.ID(), to.ID(), ps)
	toldOf := func() int {
		c := 0
		for _, x := range r.get() {
			if x.h.Epoch == epoch && x.h.From == from.ID() {
				c++
			}
		}
		return c
	}
	waitFor(t, "the old owner to be told", func() bool { return toldOf() == 1 })
	i := h.index(from)
	h.nodes[i] = reopen(t, from)
	waitFor(t, "the reopened owner to be told again", func() bool { return toldOf() == 2 })
	r.hold.Store(false)
	waitFor(t, "the target to own the partitions everywhere", func() bool { return ownedAt(h.nodes, to.ID(), ps) })
	var began time.Duration
	for _, nd := range h.nodes {
		if at, _, ok := h.firstSeen(nd.ID(), func(s *state) bool { return s.parts[ps[0]].Epoch >= epoch }); ok && (began == 0 || at < began) {
			began = at
		}
	}
	done, _, _ := h.firstSeen(to.ID(), func(s *state) bool { return s.parts[ps[0]].Epoch > epoch })
	if done-began >= bigL+bigMargin {
		t.Fatalf("completed %v after it began: not by the report", done-began)
	}
	h.checkTables(t)
}
