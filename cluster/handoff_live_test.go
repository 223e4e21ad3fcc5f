package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"
)

// beginHandoffs begins, on whichever node leads, the handoff of partitions ps from
// one member to another, and returns its epoch. A retry after an indeterminate
// failure finds the handoff begun and takes it.
func beginHandoffs(tb testing.TB, nodes []*Node, from, to NodeID, ps []int) (epoch uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	last := ""
	var tried uint64 // the index of an attempt whose outcome was unknown
	err := onLeader(tb, nodes, func(l *Node) error {
		s := l.fsm.cur.Load()
		var hs []handoff
		for _, p := range ps {
			a := s.parts[p]
			switch {
			case a.State == PartitionHandoff && a.Owner == from && a.Next == to:
				epoch = a.Epoch
			case tried != 0 && a.State == PartitionActive && a.Owner == to && a.Epoch > tried:
				epoch = tried // that attempt landed, and a quick report completed it
			default:
				hs = append(hs, handoff{P: p, From: from, To: to, Expect: a.Epoch})
			}
		}
		if len(hs) == 0 {
			return nil
		}
		// The entry's index is the handoff's epoch; the table may be past it by
		// the time we look (a quick report completes it).
		f := l.raft.Apply(encodeBeginHandoff(hs), enqueueTimeout(ctx))
		err := l.wait(ctx, f)
		if err == nil {
			err, _ = f.Response().(error)
		} else if idx := f.Index(); idx != 0 {
			tried = idx // its outcome is unknown: it may have been committed even so
		}
		if err != nil {
			if err.Error() != last {
				last = err.Error()
				tb.Logf("begin handoff on %s: %v (retrying)", l.ID(), err)
			}
			return err
		}
		epoch = f.Index()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return epoch
}

// partitionsOf returns the distinct partitions of sandboxes.
func partitionsOf(sandboxes []string) []int {
	var ps []int
	for _, sb := range sandboxes {
		if p := PartitionOf(sb); !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	sort.Ints(ps)
	return ps
}

// ownedAt reports whether every node's table has each of ps active on owner.
func ownedAt(nodes []*Node, owner NodeID, ps []int) bool {
	for _, nd := range nodes {
		for _, p := range ps {
			if a := nd.Partition(p); a.State != PartitionActive || a.Owner != owner {
				return false
			}
		}
	}
	return true
}

// firstSeen returns when replica id first published a state satisfying cond, and
// that state. A replica makes a state current a moment before the harness records
// it, so when the replica's current state satisfies cond, firstSeen waits for the
// record.
func (h *harness) firstSeen(id NodeID, cond func(*state) bool) (time.Duration, *state, bool) {
	nd := byID(h.nodes, id)
	must := nd != nil && cond(nd.fsm.cur.Load())
	deadline := time.Now().Add(patience)
	for {
		h.histMu.Lock()
		for _, e := range h.hist[id] {
			if cond(e.s) {
				h.histMu.Unlock()
				return e.at, e.s, true
			}
		}
		h.histMu.Unlock()
		if !must || time.Now().After(deadline) {
			return 0, nil, false
		}
		time.Sleep(time.Millisecond) // the record follows the publish at once
	}
}

// TestHandoffReported: the old owner is told of a handoff (OnHandoff) and, once
// the hook returns, reports it to the leader, which completes it. While the hook
// holds, no node admits the partition's sandboxes (ErrHandoff) and Owner reports
// none; after the report the target admits them at a higher epoch. L + δ is 2.3 s
// here and the leader waits that long from the first replica's BeginHandoff before
// completing an unreported handoff, so a completion sooner came from the report. No
// sandbox is admitted by two nodes at once. It reports BeginHandoff → completion per
// partition with a hook that returns at once.
func TestHandoffReported(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	const bigL, bigMargin = 2 * time.Second, 300 * time.Millisecond
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) {
		cfg.LeaseTTL, cfg.LeaseMargin = bigL, bigMargin
		r.use(cfg)
	})
	h.frozen.Store(true)
	from := h.follower(9)
	to := h.others(from)[0]
	if to.IsLeader() {
		to = h.others(from)[1]
	}
	sandboxes := owned(t, from, 9)
	rec := record(h.nodes, sandboxes)
	waitFor(t, "the owner to admit its sandboxes", func() bool { return rec.admitted(sandboxes, from) })
	// began returns when the first replica applied the handoff of p at epoch e, and
	// done when the target applied its completion.
	times := func(p int, e uint64) (began, done time.Duration) {
		for _, nd := range h.nodes {
			at, _, ok := h.firstSeen(nd.ID(), func(s *state) bool { return s.parts[p].Epoch >= e })
			if ok && (began == 0 || at < began) {
				began = at
			}
		}
		done, s, ok := h.firstSeen(to.ID(), func(s *state) bool { return s.parts[p].Epoch > e })
		if !ok || s.parts[p].Owner != to.ID() || began == 0 {
			var st Assignment
			if s != nil {
				st = s.parts[p]
			}
			sb := sandboxes[0]
			for _, x := range sandboxes {
				if PartitionOf(x) == p {
					sb = x
				}
			}
			t.Fatalf("partition %d: no history of the handoff at epoch %d on %s (began %v, first later state %v %+v)%s", p, e, to.ID(), began, ok, st, h.history(sb))
		}
		return began, done
	}

	// Held first: the handoff lasts until the hook returns.
	r.hold.Store(true)
	first := []int{PartitionOf(sandboxes[0])}
	epoch := beginHandoffs(t, h.nodes, from.ID(), to.ID(), first)
	waitFor(t, "the old owner to be told", func() bool {
		told := r.get()
		return len(told) > 0 && told[len(told)-1].h.Epoch == epoch
	})
	told := r.get()
	if h0 := told[len(told)-1].h; h0.From != from.ID() || h0.To != to.ID() || !slices.Equal(h0.Partitions, first) {
		t.Fatalf("told %+v", h0)
	}
	waitFor(t, "every node to see the handoff", func() bool {
		for _, nd := range h.nodes {
			if nd.Partition(first[0]).Epoch < epoch {
				return false
			}
		}
		return true
	})
	for _, nd := range h.nodes {
		if err := nd.Admit(sandboxes[0]); !errors.Is(err, ErrHandoff) {
			t.Fatalf("%s: Admit during the handoff = %v", nd.ID(), err)
		}
		if o, e, ok := nd.Owner(sandboxes[0]); ok || o != from.ID() || e != epoch {
			t.Fatalf("%s: Owner during the handoff = %s@%d %v", nd.ID(), o, e, ok)
		}
	}
	r.hold.Store(false)
	waitFor(t, "the target to own the partition everywhere", func() bool { return ownedAt(h.nodes, to.ID(), first) })
	if began, done := times(first[0], epoch); done-began >= bigL+bigMargin {
		t.Fatalf("completed %v after it began: not by the report", done-began)
	}

	// Then a hook that returns at once, one partition at a time.
	var took []time.Duration
	for _, p := range partitionsOf(sandboxes[1:]) {
		if p == first[0] {
			continue
		}
		e := beginHandoffs(t, h.nodes, from.ID(), to.ID(), []int{p})
		waitFor(t, "the target to own the partition everywhere", func() bool { return ownedAt(h.nodes, to.ID(), []int{p}) })
		began, done := times(p, e)
		if done-began >= bigL+bigMargin {
			t.Fatalf("partition %d completed %v after it began: not by the report", p, done-began)
		}
		took = append(took, done-began)
	}
	waitFor(t, "the target to admit every sandbox", func() bool {
		for _, sb := range sandboxes {
			if to.Admit(sb) != nil {
				return false
			}
		}
		return true
	})
	rec.finish(t, h)
	h.checkTables(t)
	slices.Sort(took)
	t.Logf("BeginHandoff applied on the first replica → completion applied on the target, one partition, hook returning at once: median %v, range %v-%v over %d", took[len(took)/2], took[0], took[len(took)-1], len(took))
}

// TestHandoffUnreported: an old owner whose hook never returns keeps its handoff until
// the leader completes it, no earlier than L + δ after the leader applied the
// BeginHandoff, with no overlapping admissions.
//
// Raft's timers run at 0.4 rather than 0.1: each new leadership starts the handoff's
// L + δ afresh, so a loaded machine's spurious elections, every few hundred
// milliseconds at 50 ms timers, could put the completion off past the wait.
func TestHandoffUnreported(t *testing.T) {
	// Not parallel (see chaos_helpers_test.go).
	r := newReporter()
	h := newHarness(t, 3, func(cfg *Config) { r.use(cfg); cfg.Multiplier = 0.4 })
	h.frozen.Store(true)
	r.hold.Store(true) // the old owner never finishes stopping its sandboxes
	from := h.follower(8)
	to := h.others(from)[0]
	sandboxes := owned(t, from, 8)
	ps := partitionsOf(sandboxes)
	rec := record(h.nodes, sandboxes)
	waitFor(t, "the owner to admit its sandboxes", func() bool { return rec.admitted(sandboxes, from) })
	epoch := beginHandoffs(t, h.nodes, from.ID(), to.ID(), ps)
	waitFor(t, "the target to own the partitions everywhere", func() bool { return ownedAt(h.nodes, to.ID(), ps) })
	waitFor(t, "the target to admit every sandbox", func() bool { return rec.admitted(sandboxes, to) })
	rec.finish(t, h)
	h.checkTables(t)
	var began time.Duration
	for _, nd := range h.nodes {
		at, _, ok := h.firstSeen(nd.ID(), func(s *state) bool { return s.parts[ps[0]].Epoch >= epoch })
		if ok && (began == 0 || at < began) {
			began = at
		}
	}
	for _, nd := range h.nodes {
		done, _, _ := h.firstSeen(nd.ID(), func(s *state) bool { return s.parts[ps[0]].Epoch > epoch })
		if done-began < testL+testMargin {
			t.Fatalf("%s applied the completion %v after the first replica applied the begin, before L + δ", nd.ID(), done-began)
		}
	}
}

// byID returns the node of nodes with id (nil if none).
func byID(nodes []*Node, id NodeID) *Node {
	for _, nd := range nodes {
		if nd.ID() == id {
			return nd
		}
	}
	return nil
}
