package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestDeadServerCleanup: three voters and a non-voter; a voter that is not the
// leader is closed. After DeadServerTimeout the leader removes it from the raft
// configuration, marks it left and promotes the non-voter, so the cluster has three
// live voters again and still commits.
func TestDeadServerCleanup(t *testing.T) {
	t.Parallel()
	const timeout = deadTestTimeout
	nodes := formedWithTimeout(t, 4, timeout)
	victim, spare := voterAndSpare(t, nodes)
	killed := time.Now()
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	rest := awaitReplaced(t, nodes, victim, spare, "the dead voter removed and the non-voter promoted")
	// Safety: not before the member was silent for the timeout. Silence counts from
	// its last heartbeat, sent up to L/6 before the kill (L is a generous bound).
	gone := time.Since(killed)
	if gone < timeout-deadTestL {
		t.Fatalf("removed %v after the kill, before the timeout of %v", gone, timeout)
	}
	t.Logf("removed and replaced %v after the kill: L + δ = %v to be marked down, a timeout of %v", gone, deadTestL+deadTestMargin, timeout)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := onLeader(t, rest, func(l *Node) error { return l.SetValues(ctx, map[string][]byte{"k": []byte("v")}) }); err != nil {
		t.Fatalf("a write after the cleanup: %v", err)
	}
}

// TestDeadServerCleanupFinishesLeft: a voter marked left whose removal from the raft
// configuration never followed (the leader lost leadership between the two steps
// of Remove) is removed by the dead-server pass once silent for the timeout, and the
// non-voter takes its seat: a left member is refused heartbeats, so nothing else
// would ever take it out.
func TestDeadServerCleanupFinishesLeft(t *testing.T) {
	t.Parallel()
	nodes := formedWithTimeout(t, 4, deadTestTimeout)
	victim, spare := voterAndSpare(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	// The first half of a removal only: the member table says left, the raft
	// configuration still has the voter.
	if err := onLeader(t, nodes, func(l *Node) error { return l.apply(ctx, encodeSetStatus(victim.ID(), StatusLeft)) }); err != nil {
		t.Fatal(err)
	}
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	awaitReplaced(t, nodes, victim, spare, "the left voter removed and the non-voter promoted")
}

// TestDeadServerKeptWithoutSpare: three voters and no non-voter; a follower voter
// is closed. Past DeadServerTimeout the leader keeps it in the configuration (no
// spare could take its seat) and the two left still commit.
func TestDeadServerKeptWithoutSpare(t *testing.T) {
	t.Parallel()
	nodes := formedWithTimeout(t, 3, 300*time.Millisecond)
	l := leader(t, nodes...)
	victim := nodes[0]
	if victim == l {
		victim = nodes[1]
	}
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	var rest []*Node
	for _, nd := range nodes {
		if nd != victim {
			rest = append(rest, nd)
		}
	}
	// The pass that keeps it runs only once the victim is down and past the timeout.
	waitFor(t, "the leader to keep the dead voter several times", func() bool {
		l := leader(t, rest...)
		return l.deadKept.Load() >= 5
	})
	for _, nd := range rest {
		servers, err := nd.RaftServers()
		if err != nil {
			t.Fatal(err)
		}
		if !servers[victim.ID()] || len(servers) != 3 {
			t.Fatalf("%s's configuration %v: the dead voter must stay a voter", nd.ID(), servers)
		}
		if m := memberOf(nd, victim.ID()); m.Status != StatusDown {
			t.Fatalf("%s has the victim %s, want down", nd.ID(), m.Status)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := onLeader(t, rest, func(l *Node) error { return l.SetValues(ctx, map[string][]byte{"k": []byte("v")}) }); err != nil {
		t.Fatalf("a write with one voter dead: %v", err)
	}
}

// deadTestTimeout is the DeadServerTimeout of the tests in which a spare must
// survive it: on a loaded two-core machine under -race a live node has gone
// unheard for over a second (for over 3 s once in a CI run of the whole suite), and
// a spare silent for the timeout is itself removed as dead, leaving no seat-filler.
// Generous, as liveness bounds are.
const deadTestTimeout = 8 * time.Second

// deadTestL and deadTestMargin are the lease of the dead-server tests, with raft's
// timers at 0.4 (200 ms heartbeats): each election restarts a dead member's
// timeout, and with the package's 50 ms timers a whole-suite CI run on a loaded
// machine once saw elections every few seconds for two minutes, so the timeout never
// ran out.
const deadTestL, deadTestMargin = 2 * time.Second, 300 * time.Millisecond

// cleanupPatience bounds the wait for a dead server's removal. Silence counts from a
// leadership's start at the earliest, so each election on a loaded machine restarts
// the timeout: the bound is well past patience.
const cleanupPatience = 2 * time.Minute

// waitLong is waitFor with cleanupPatience as its bound.
func waitLong(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(cleanupPatience)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// formedWithTimeout starts n nodes with no dead-server cleanup to speak of while
// they form (a node slowed down while it joins must not be removed), then sets
// their timeout.
func formedWithTimeout(t *testing.T, n int, timeout time.Duration) []*Node {
	t.Helper()
	nodes := clusterWith(t, n, func(_ int, cfg *Config) {
		cfg.DeadServerTimeout = time.Hour
		cfg.LeaseTTL, cfg.LeaseMargin, cfg.Multiplier = deadTestL, deadTestMargin, 0.4
	})
	for _, nd := range nodes {
		nd.deadAfter.Store(int64(timeout))
	}
	return nodes
}

// memberOf returns nd's member record of id (the zero Member if it has none).
func memberOf(nd *Node, id NodeID) Member {
	return nd.fsm.cur.Load().members[id]
}

// TestDeadVoterVerdict walks the removal rule: a dead voter goes only when the
// voters left have a healthy majority and the target can be kept.
func TestDeadVoterVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    deadSet
		want int
	}{
		{"no dead voter", deadSet{voterCount: 3, healthyVoters: 3, target: 3}, noDeadVoter},
		{"3 voters, 1 dead, a spare", deadSet{voters: []NodeID{"x"}, voterCount: 3, healthyVoters: 2, spares: 1, target: 3}, removeVoter},
		{"3 voters, 1 dead, no spare", deadSet{voters: []NodeID{"x"}, voterCount: 3, healthyVoters: 2, target: 3}, keepNoSpare},
		{"4 voters over a target of 3, 1 dead", deadSet{voters: []NodeID{"x"}, voterCount: 4, healthyVoters: 3, target: 3}, removeVoter},
		{"5 voters, 2 dead, spares", deadSet{voters: []NodeID{"x", "y"}, voterCount: 5, healthyVoters: 3, spares: 2, target: 5}, removeVoter},
		{"5 voters, 3 down: no healthy majority left", deadSet{voters: []NodeID{"x"}, voterCount: 5, healthyVoters: 2, spares: 2, target: 5}, keepNoMajority},
		{"3 voters, 1 dead, 1 unhealthy", deadSet{voters: []NodeID{"x"}, voterCount: 3, healthyVoters: 1, spares: 1, target: 3}, keepNoMajority},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.d.voterVerdict(); got != tt.want {
				t.Fatalf("verdict %d, want %d", got, tt.want)
			}
		})
	}
}

// awaitReplaced waits until the leader among the nodes other than victim has taken
// victim out of the raft configuration, marked it left, and seated spare as a
// voter; it returns those other nodes.
func awaitReplaced(t *testing.T, nodes []*Node, victim, spare *Node, what string) []*Node {
	t.Helper()
	rest := make([]*Node, 0, len(nodes)-1)
	for _, nd := range nodes {
		if nd != victim {
			rest = append(rest, nd)
		}
	}
	var last string // what the last look saw, for a failure's message
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s", last)
		}
	})
	waitLong(t, what, func() bool {
		l := leader(t, rest...)
		servers, err := l.RaftServers()
		if err != nil {
			last = err.Error()
			return false
		}
		_, present := servers[victim.ID()]
		m := memberOf(l, victim.ID())
		last = fmt.Sprintf("leader %s, servers %v, victim %s, spare %s (%s), kept %d", l.ID(), servers, m.Status, spare.ID(), memberOf(l, spare.ID()).Status, l.deadKept.Load())
		return !present && servers[spare.ID()] && voters(l) == 3 && m.Status == StatusLeft
	})
	return rest
}

// voterAndSpare returns a voter that does not lead and a non-voter among nodes.
func voterAndSpare(t *testing.T, nodes []*Node) (voter, spare *Node) {
	t.Helper()
	l := leader(t, nodes...)
	servers, err := l.RaftServers()
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		switch {
		case !servers[nd.ID()]:
			spare = nd
		case nd != l && voter == nil:
			voter = nd
		}
	}
	if voter == nil || spare == nil {
		t.Fatalf("no follower voter and non-voter among %v", servers)
	}
	return voter, spare
}
