package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The lease harness: a cluster whose nodes can be cut off the network, with records
// of their fence and lease callbacks, of when each replica saw partitions move, and of
// every admission, all on the package's one monotonic clock (mono).

// harness is a 3-node cluster under observation.
type harness struct {
	tb     testing.TB
	nodes  []*Node
	down   []*atomic.Bool // per node: its network is cut
	events []*leaseEvents
	moves  *moveLog
	leads  *leadLog
	floors *floorLog
	frozen atomic.Bool // while set, Busy reports every partition busy: no rebalance

	histMu sync.Mutex
	hist   map[NodeID][]seenState // every state each replica published, when
}

type seenState struct {
	at time.Duration
	s  *state
}

// history describes, for a failure message, how each replica saw sandbox's owner
// change and when each node's lease came and went.
func (h *harness) history(sandbox string) string {
	h.histMu.Lock()
	defer h.histMu.Unlock()
	p := PartitionOf(sandbox)
	out := ""
	for i, nd := range h.nodes {
		out += fmt.Sprintf("\n  %s:", nd.ID())
		var last Assignment
		for _, e := range h.hist[nd.ID()] {
			if a := e.s.parts[p]; a != last {
				out += fmt.Sprintf(" [%v idx %d → %s@%d]", e.at, e.s.index, a.Owner, a.Epoch)
				last = a
			}
		}
		f, l := h.events[i].get()
		out += fmt.Sprintf(" fences %v leases %v", f, l)
	}
	return out
}

// newHarness starts n nodes with the test lease profile, passing each config through
// mod (when not nil) first, and waits until every node holds a lease.
func newHarness(tb testing.TB, n int, mod func(*Config)) *harness {
	tb.Helper()
	h := &harness{tb: tb, moves: &moveLog{at: map[NodeID]map[int]time.Duration{}}, leads: &leadLog{}, floors: &floorLog{}, hist: map[NodeID][]seenState{}}
	for i := 0; i < n; i++ {
		h.down = append(h.down, &atomic.Bool{})
		h.events = append(h.events, &leaseEvents{})
	}
	h.nodes = clusterWith(tb, n, func(i int, cfg *Config) {
		down, ev, id := h.down[i], h.events[i], cfg.NodeID
		cfg.netUp = func() bool { return !down.Load() }
		cfg.OnFence = func() { ev.add(&ev.fences) }
		cfg.OnLease = func() { ev.add(&ev.leases) }
		cfg.observe = func(s *state) {
			h.moves.seen(id, s)
			h.histMu.Lock()
			h.hist[id] = append(h.hist[id], seenState{mono(), s})
			h.histMu.Unlock()
		}
		cfg.onLead = func(since time.Duration) { h.leads.add(id, since) }
		cfg.onFloor = func(of NodeID, at time.Duration) { h.floors.add(id, of, at) }
		cfg.Busy = func(int) bool { return h.frozen.Load() }
		if mod != nil {
			mod(cfg)
		}
	})
	waitFor(tb, "every node to hold a lease", func() bool {
		for _, nd := range h.nodes {
			if ok, _ := nd.Lease(); !ok {
				return false
			}
		}
		return true
	})
	return h
}

// index returns the position of nd among the harness's nodes.
func (h *harness) index(nd *Node) int {
	for i, x := range h.nodes {
		if x == nd {
			return i
		}
	}
	h.tb.Fatalf("%s is not in the harness", nd.ID())
	return -1
}

// others returns every node but nd.
func (h *harness) others(nd *Node) []*Node {
	var out []*Node
	for _, x := range h.nodes {
		if x != nd {
			out = append(out, x)
		}
	}
	return out
}

// follower returns a node that is not the leader right now and owns at least k of
// the sample sandboxes in its table. Under load a node can be failed by mistake
// and own nothing for a while, until the rebalance gives it partitions back.
func (h *harness) follower(k int) *Node {
	var f *Node
	waitFor(h.tb, "a follower that owns partitions", func() bool {
		l := leader(h.tb, h.nodes...)
		for _, x := range h.others(l) {
			if len(ownedUpTo(x, k)) == k {
				f = x
				return true
			}
		}
		return false
	})
	return f
}

// isolate cuts nd off: every connection to or from it is closed and no new one is
// made until heal.
func (h *harness) isolate(nd *Node) {
	h.down[h.index(nd)].Store(true)
	nd.stream.cut()
}

func (h *harness) heal(nd *Node) { h.down[h.index(nd)].Store(false) }

// owned returns k sandbox ids whose partitions nd owns in its table.
func owned(tb testing.TB, nd *Node, k int) []string {
	tb.Helper()
	out := ownedUpTo(nd, k)
	if len(out) < k {
		tb.Fatalf("%s owns fewer than %d of the sample sandboxes", nd.ID(), k)
	}
	return out
}

// ownedUpTo returns at most k sandbox ids whose partitions nd owns in its table.
func ownedUpTo(nd *Node, k int) []string {
	var out []string
	for _, sb := range sandboxIDs(4096) {
		if len(out) == k {
			break
		}
		if o, _, ok := nd.Owner(sb); ok && o == nd.ID() {
			out = append(out, sb)
		}
	}
	return out
}

// leaseEvents records a node's OnFence and OnLease calls.
type leaseEvents struct {
	mu             sync.Mutex
	fences, leases []time.Duration
}

func (e *leaseEvents) add(to *[]time.Duration) {
	e.mu.Lock()
	*to = append(*to, mono())
	e.mu.Unlock()
}

// get returns copies of the fence and lease times.
func (e *leaseEvents) get() (fences, leases []time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.fences...), append([]time.Duration(nil), e.leases...)
}

// moveLog records, for each replica, when it first applied a state in which a
// watched partition is no longer owned by the victim.
//
// Only a move after the victim's assignment counts: a replica that lags behind the
// victim's table when the log is armed still publishes states in which the
// partition has its previous owner, and those are not moves away from the victim.
// An assignment's epoch is the log index that set it, so a later one has a higher
// epoch than the victim's.
type moveLog struct {
	mu     sync.Mutex
	victim NodeID
	watch  []int
	from   map[int]uint64 // per watched partition: its epoch in the victim's table
	at     map[NodeID]map[int]time.Duration
}

// arm starts watching the partitions of sandboxes, owned by victim in its table.
func (m *moveLog) arm(victim *Node, sandboxes []string) {
	from := map[int]uint64{}
	for _, sb := range sandboxes {
		p := PartitionOf(sb)
		from[p] = victim.Partition(p).Epoch
	}
	m.armAt(victim.ID(), from)
}

// armAt starts watching partitions owned by victim, each since the given epoch.
func (m *moveLog) armAt(victim NodeID, from map[int]uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.victim = victim
	m.from = from
	for p := range from {
		m.watch = append(m.watch, p)
	}
}

func (m *moveLog) seen(observer NodeID, s *state) {
	now := mono()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.watch {
		if a := s.parts[p]; a.Owner == m.victim || a.Epoch <= m.from[p] {
			continue
		}
		if m.at[observer] == nil {
			m.at[observer] = map[int]time.Duration{}
		}
		if _, ok := m.at[observer][p]; !ok {
			m.at[observer][p] = now
		}
	}
}

// times returns when observer saw each watched partition move, and whether it saw
// all of them.
func (m *moveLog) times(observer NodeID) (map[int]time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]time.Duration{}
	for p, t := range m.at[observer] {
		out[p] = t
	}
	return out, len(out) == len(m.watch)
}

// leadLog records leadership starts.
type leadLog struct {
	mu     sync.Mutex
	starts []leadStart
}

type leadStart struct {
	node  NodeID
	since time.Duration
}

func (l *leadLog) add(id NodeID, since time.Duration) {
	l.mu.Lock()
	l.starts = append(l.starts, leadStart{id, since})
	l.mu.Unlock()
}

// firstAfter returns the first leadership start at or after t.
func (l *leadLog) firstAfter(t time.Duration) (leadStart, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.starts {
		if s.since >= t {
			return s, true
		}
	}
	return leadStart{}, false
}

// TestMoveLogIgnoresLaggingReplica: a replica behind the victim's table, still
// showing a watched partition's previous owner, has not seen it move away from the
// victim; the same partition under a later epoch has.
func TestMoveLogIgnoresLaggingReplica(t *testing.T) {
	m := &moveLog{at: map[NodeID]map[int]time.Duration{}}
	m.armAt("v", map[int]uint64{7: 20})
	at := func(owner NodeID, epoch uint64) *state {
		s := emptyState()
		s.parts[7] = Assignment{Owner: owner, Epoch: epoch, State: PartitionActive}
		return s
	}
	tests := []struct {
		name  string
		s     *state
		moved bool
	}{
		{"previous owner, earlier epoch (lagging)", at("a", 12), false},
		{"the victim", at("v", 20), false},
		{"another owner, later epoch", at("b", 31), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m.seen("r", tt.s)
			if _, all := m.times("r"); all != tt.moved {
				t.Fatalf("moved %v, want %v", all, tt.moved)
			}
		})
	}
}
