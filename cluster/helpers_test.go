package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// patience bounds every wait on the cluster. It is generous: tests run under -race on
// small shared machines, where 50 ms raft timeouts see spurious elections.
const patience = 30 * time.Second

// waitFor polls cond until it holds or patience runs out.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDrained waits until every one of nodes sees member id drained.
func waitDrained(tb testing.TB, nodes []*Node, id NodeID) {
	tb.Helper()
	waitFor(tb, string(id)+" drained on every node", func() bool {
		for _, nd := range nodes {
			if !nd.Drained(id) {
				return false
			}
		}
		return true
	})
}

// testSecret is the cluster secret of test nodes.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// The test lease profile: L and δ scaled down with the raft timeouts.
const (
	testL      = 300 * time.Millisecond
	testMargin = 100 * time.Millisecond
)

func testConfig(id NodeID, dir, listen string, join bool) *Config {
	cfg := DefaultConfig()
	cfg.NodeID = id
	cfg.DataDir = dir
	cfg.RaftListen = listen
	cfg.HTTPAddr = "http-" + string(id)
	cfg.Join = join
	cfg.Secret = testSecret
	cfg.Multiplier = 0.1        // 50 ms heartbeat and election
	cfg.RebalanceRate = 1 << 20 // tests of the rate use plan directly
	cfg.LeaseTTL = testL
	cfg.LeaseMargin = testMargin
	cfg.Logger = discard
	cfg.RaftLogOutput = io.Discard
	if os.Getenv("SANDGATE_CLUSTER_LOG") != "" { // debugging a run: the package's logs on stderr
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
		cfg.RaftLogOutput = os.Stderr
		cfg.RaftLogLevel = "info"
	}
	return cfg
}

// openNode opens a node and closes it at cleanup (Close is idempotent, so tests may
// close it earlier to kill it).
func openNode(tb testing.TB, cfg *Config) *Node {
	tb.Helper()
	n, err := Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("close %s: %v", n.ID(), err)
		}
	})
	return n
}

// leader returns the node among nodes that leads, waiting for one.
func leader(tb testing.TB, nodes ...*Node) *Node {
	tb.Helper()
	var l *Node
	waitFor(tb, "a leader", func() bool {
		for _, n := range nodes {
			if n.IsLeader() {
				l = n
				return true
			}
		}
		return false
	})
	return l
}

// placed reports whether n's table has every partition active on its rendezvous
// owner among want, and want are exactly its alive members.
func placed(n *Node, want ...*Node) bool {
	s := n.fsm.cur.Load()
	alive := aliveIDs(s)
	if len(alive) != len(want) {
		return false
	}
	for _, id := range alive {
		found := false
		for _, w := range want {
			found = found || w.ID() == id
		}
		if !found {
			return false
		}
	}
	d := desired(alive)
	for p, a := range s.parts {
		if a.State != PartitionActive || a.Owner != d[p] {
			return false
		}
	}
	return true
}

// sameTable reports whether every node has the same table as the first.
func sameTable(nodes ...*Node) bool {
	first := nodes[0].fsm.cur.Load()
	for _, n := range nodes[1:] {
		s := n.fsm.cur.Load()
		for p := range first.parts {
			if s.parts[p] != first.parts[p] {
				return false
			}
		}
	}
	return true
}

// cluster starts n nodes: the first bootstraps, the others join through the leader.
// It returns once all are voters and every node sees the same, placed table.
func cluster(tb testing.TB, n int) []*Node { return clusterWith(tb, n, nil) }

// clusterWith is cluster with each node's config passed through mod (when not nil)
// before it opens.
func clusterWith(tb testing.TB, n int, mod func(i int, cfg *Config)) []*Node {
	tb.Helper()
	config := func(i int) *Config {
		cfg := testConfig(NodeID(fmt.Sprintf("n%d", i)), tb.TempDir(), "127.0.0.1:0", i > 0)
		if mod != nil {
			mod(i, cfg)
		}
		return cfg
	}
	nodes := []*Node{openNode(tb, config(0))}
	waitFor(tb, "n0 to place all partitions", func() bool { return placed(nodes[0], nodes[0]) })
	for i := 1; i < n; i++ {
		nd := openNode(tb, config(i))
		nodes = append(nodes, nd)
		joinVia(tb, nodes, nd)
	}
	waitFor(tb, "all voters, same placed table everywhere", func() bool {
		l := leader(tb, nodes...)
		return voters(l) == min(n, 3) && sameTable(nodes...) && placed(nodes[0], nodes...)
	})
	return nodes
}

// joinVia joins nd through whichever node leads, retrying when leadership moves.
func joinVia(tb testing.TB, nodes []*Node, nd *Node) {
	tb.Helper()
	var err error
	waitFor(tb, "join of "+string(nd.ID()), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = leader(tb, nodes...).Join(ctx, nd.Self())
		if err != nil {
			tb.Logf("join %s: %v (retrying)", nd.ID(), err)
		}
		return err == nil
	})
}

func voters(n *Node) int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return -1
	}
	c := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}
