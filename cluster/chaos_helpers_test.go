package cluster

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers of the handoff, drain and chaos tests: an old owner that reports its
// handoffs done, one-sided link blocking, restarting a node in place, and the
// replicated-table checks (epochs only grow, replicas agree index by index).

// reporter plays the gateway's part in a handoff (Config.OnHandoff): it records
// each handoff it is told of and returns at once, so the node reports it done, or
// while held, not before the hold is released or the node closes.
type reporter struct {
	hold atomic.Bool

	mu   sync.Mutex
	told []reported
}

type reported struct {
	h        Handoff
	at       time.Duration // when the node called the hook
	returned time.Duration // when the hook returned (0 if it never did)
}

func newReporter() *reporter { return &reporter{} }

// use makes the reporter the OnHandoff of cfg.
func (r *reporter) use(cfg *Config) {
	cfg.OnHandoff = r.hook
}

func (r *reporter) hook(ctx context.Context, h Handoff) {
	r.mu.Lock()
	i := len(r.told)
	r.told = append(r.told, reported{h: h, at: mono()})
	r.mu.Unlock()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for r.hold.Load() { // polling a test switch, bounded by the node's life
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	r.mu.Lock()
	r.told[i].returned = mono()
	r.mu.Unlock()
}

// get returns the handoffs the reporter was told of.
func (r *reporter) get() []reported {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reported(nil), r.told...)
}

// links blocks connections one way: while from→to is blocked, node from cannot dial
// node to (raft RPCs and heartbeats from it fail), while to may still dial from and
// be answered on that connection.
type links struct {
	mu      sync.Mutex
	addr    map[string]NodeID
	blocked map[[2]NodeID]bool
}

func newLinks() *links {
	return &links{addr: map[string]NodeID{}, blocked: map[[2]NodeID]bool{}}
}

// use installs the dial hook on cfg.
func (l *links) use(cfg *Config) {
	from := cfg.NodeID
	cfg.netTo = func(addr string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		to, ok := l.addr[addr]
		return !ok || !l.blocked[[2]NodeID{from, to}]
	}
}

// learn records the nodes' raft addresses (known once they listen).
func (l *links) learn(nodes ...*Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, nd := range nodes {
		l.addr[nd.RaftAddr()] = nd.ID()
	}
}

// set blocks (or opens) from→to; blocking closes the connections from made to to.
func (l *links) set(from, to *Node, block bool) {
	l.mu.Lock()
	l.blocked[[2]NodeID{from.ID(), to.ID()}] = block
	l.mu.Unlock()
	if block {
		from.stream.cutTo(to.RaftAddr())
	}
}

// split blocks every link between the two groups, both ways.
func (l *links) split(a, b []*Node) {
	for _, x := range a {
		for _, y := range b {
			l.set(x, y, true)
			l.set(y, x, true)
		}
	}
}

// healAll opens every link.
func (l *links) healAll() {
	l.mu.Lock()
	l.blocked = map[[2]NodeID]bool{}
	l.mu.Unlock()
}

// cutTo closes the connections this node dialled to addr.
func (s *streamLayer) cutTo(addr string) {
	s.mu.Lock()
	var out []*trackedConn
	for c := range s.conns {
		if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok && ra.String() == addr {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	for _, c := range out {
		c.Close()
	}
}

// reopen closes nd if it is not closed and opens it again with the same id, data
// directory, address and hooks, as a restarted process would.
func reopen(tb testing.TB, nd *Node) *Node {
	tb.Helper()
	if err := nd.Close(); err != nil {
		tb.Fatal(err)
	}
	cfg := nd.cfg
	cfg.RaftListen = nd.RaftAddr()
	return openNode(tb, &cfg)
}

// add starts a sampler for nd (a node reopened under an id the recorder knows).
func (r *recorder) add(nd *Node, sandboxes []string) {
	r.mu.Lock()
	if r.seen[nd.ID()] == nil {
		r.seen[nd.ID()] = map[string]bool{}
	}
	r.mu.Unlock()
	r.wg.Add(1)
	go r.sample(nd, sandboxes)
}

// checkTables fails tb unless, on every replica, no partition's epoch ever went
// down from one published state to the next (a replay after a restart starts
// over), and every replica published the same table at every index it reached: a
// command refused on one replica (a stale epoch) was refused on all.
func (h *harness) checkTables(tb testing.TB) {
	tb.Helper()
	h.histMu.Lock()
	defer h.histMu.Unlock()
	at := map[uint64]*state{}
	for id, hist := range h.hist {
		var prev *state
		for _, e := range hist {
			s := e.s
			if prev != nil && s.index > prev.index {
				for p := range s.parts {
					if s.parts[p].Epoch < prev.parts[p].Epoch {
						tb.Errorf("%s: partition %d went from epoch %d to %d at index %d", id, p, prev.parts[p].Epoch, s.parts[p].Epoch, s.index)
						return
					}
				}
			}
			prev = s
			if first, ok := at[s.index]; !ok {
				at[s.index] = s
			} else if first != s && !sameParts(first, s) {
				tb.Errorf("%s: a different table at index %d than another replica", id, s.index)
				return
			}
		}
	}
}

func sameParts(a, b *state) bool {
	if &a.parts[0] == &b.parts[0] {
		return true
	}
	for p := range a.parts {
		if a.parts[p] != b.parts[p] {
			return false
		}
	}
	return true
}

// sandboxesOf returns up to k sandboxes owned by each of nodes.
func sandboxesOf(nodes []*Node, k int) []string {
	var out []string
	for _, nd := range nodes {
		out = append(out, ownedUpTo(nd, k)...)
	}
	return out
}

// Not parallel: the handoff, drain and chaos tests do not call t.Parallel, so they
// run one after another before the package's parallel tests start. Each is several
// raft nodes at 50 ms timeouts under -race; beside the lease tests on a small
// machine they make elections churn, and every new leader waits L + δ before it
// moves a dead member's partitions, which the lease tests then wait for in vain.

// historyOf describes how each replica saw partition p change, for failure messages.
func (h *harness) historyOf(p int) string {
	h.histMu.Lock()
	defer h.histMu.Unlock()
	out := ""
	for _, nd := range h.nodes {
		out += fmt.Sprintf("\n  %s:", nd.ID())
		var last Assignment
		for _, e := range h.hist[nd.ID()] {
			if a := e.s.parts[p]; a != last {
				out += fmt.Sprintf(" [%v idx %d → %s@%d s%d %s]", e.at, e.s.index, a.Owner, a.Epoch, a.State, a.Next)
				last = a
			}
		}
	}
	return out
}
