package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clusterPatience bounds every wait on a test cluster: generous, since the suite runs
// under -race on loaded 2-core machines where 50 ms raft timeouts see spurious
// elections.
const clusterPatience = 60 * time.Second

// clusterRaftMultiplier scales the raft timeouts of multi-node test clusters: 150 ms
// heartbeats, elections and leader leases ride out the stalls of a loaded 2-core
// machine under -race, where the single node's 50 ms would make leaders step down
// mid-commit ("leadership lost while committing log"). A test may set its own.
const clusterRaftMultiplier = 0.3

// testCluster is n real gateway servers in one process, each with its own data
// directory, HTTP port and raft port on loopback, raft at 0.1× its timeouts. Node i
// (from 1) has id "n<i>"; n1 bootstraps and every later node joins through the node
// before it (a follower, for n3 on), so joins are forwarded to the leader.
type testCluster struct {
	t     testing.TB
	nodes []*testServer
	mod   func(i int, c *Config)
}

// newTestClusterWith starts an n-node cluster, each node's configuration passed
// through mod (when not nil; i counts from 1), and waits until every node sees all n
// members alive, the same leader, and min(n, 3) voters.
func newTestClusterWith(t testing.TB, n int, mod func(i int, c *Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, mod: mod}
	for i := 1; i <= n; i++ {
		join := ""
		if i > 1 {
			join = tc.nodes[i-2].addr()
		}
		began := time.Now()
		tc.nodes = append(tc.nodes, tc.start(i, join, "", ""))
		t.Logf("n%d started (joining through %q) in %v", i, join, time.Since(began))
	}
	tc.waitFormed(n)
	return tc
}

// start runs node i joining through join (none when ""), on the given data
// directory and HTTP address (fresh ones when "").
func (tc *testCluster) start(i int, join, dataDir, listen string) *testServer {
	tc.t.Helper()
	return newTestServer(tc.t, &serverOptions{listen: listen, config: func(c *Config) {
		c.NodeID = fmt.Sprintf("n%d", i)
		c.Join = join
		c.RaftMultiplier = clusterRaftMultiplier
		if dataDir != "" {
			c.DataDir = dataDir
		}
		if tc.mod != nil {
			tc.mod(i, c)
		}
	}})
}

// restart shuts node i down and starts it again on its data directory, HTTP and
// raft addresses, without Join: it must resume its membership by itself. t is the
// calling (sub)test; the new server is tc.t's, so it outlives a subtest.
func (tc *testCluster) restart(t testing.TB, i int) *testServer {
	t.Helper()
	old := tc.nodes[i-1]
	dir, listen, raftAddr := old.srv.cfg.DataDir, old.addr(), old.srv.cluster.RaftAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := old.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown n%d: %v", i, err)
	}
	// The freed ports may be taken for a moment as the local port of some outgoing
	// connection (other tests run in parallel): wait until both can be bound.
	waitBindable(t, listen, raftAddr)
	mod := tc.mod
	tc.mod = func(j int, c *Config) {
		c.RaftListen = raftAddr
		if mod != nil {
			mod(j, c)
		}
	}
	defer func() { tc.mod = mod }()
	ts := tc.start(i, "", dir, listen) // on tc.t: the node lives as long as the cluster
	tc.nodes[i-1] = ts
	return ts
}

// waitBindable waits until every addr can be listened on.
func waitBindable(t testing.TB, addrs ...string) {
	t.Helper()
	eventually(t, clusterPatience, fmt.Sprintf("%v to be free", addrs), func() bool {
		for _, a := range addrs {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				return false
			}
			ln.Close()
		}
		return true
	})
}

// addr is the server's host:port.
func (ts *testServer) addr() string { return strings.TrimPrefix(ts.url, "http://") }

// clusterView is GET /v1/cluster as a test reads it.
type clusterView struct {
	Node    string              `json:"node"`
	Leader  string              `json:"leader"`
	Members []clusterMemberJSON `json:"members"`
	Term    uint64              `json:"term"`
}

// view reads ts's /v1/cluster, or reports why it could not.
func (ts *testServer) view() (clusterView, error) {
	r, err := ts.send(testToken, "GET", "/v1/cluster", nil)
	if err != nil {
		return clusterView{}, err
	}
	if r.status != http.StatusOK {
		return clusterView{}, fmt.Errorf("status %d: %s", r.status, r.body)
	}
	var v clusterView
	if err := json.Unmarshal(r.body, &v); err != nil {
		return clusterView{}, err
	}
	return v, nil
}

// formed reports whether every node's view has n alive members (and no others), one
// leader agreed on by all, and voters voters; it returns what it saw otherwise.
func (tc *testCluster) formed(n, voters int) (bool, string) {
	leader := ""
	for _, ts := range tc.nodes {
		v, err := ts.view()
		if err != nil {
			return false, err.Error()
		}
		alive, vote := 0, 0
		for _, m := range v.Members {
			if m.Status == "alive" {
				alive++
			}
			if m.Voter {
				vote++
			}
		}
		if v.Leader == "" || (leader != "" && v.Leader != leader) || alive != n || len(v.Members) != n || vote != voters {
			return false, fmt.Sprintf("%s sees %+v", v.Node, v)
		}
		leader = v.Leader
	}
	return true, ""
}

// waitFormed waits until formed(n, min(n, 3)) holds.
func (tc *testCluster) waitFormed(n int) {
	tc.t.Helper()
	last := ""
	deadline := time.Now().Add(clusterPatience)
	for {
		ok, seen := tc.formed(n, min(n, 3))
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			tc.t.Fatalf("cluster of %d not formed within %v; last: %s", n, clusterPatience, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leader returns the node that leads, waiting for one.
func (tc *testCluster) leader() *testServer {
	tc.t.Helper()
	var l *testServer
	eventually(tc.t, clusterPatience, "a leader", func() bool {
		for _, ts := range tc.nodes {
			if ts.srv.cluster.IsLeader() {
				l = ts
				return true
			}
		}
		return false
	})
	return l
}

// follower returns a node that does not lead.
func (tc *testCluster) follower() *testServer {
	tc.t.Helper()
	l := tc.leader()
	for _, ts := range tc.nodes {
		if ts != l {
			return ts
		}
	}
	tc.t.Fatal("no follower in a one-node cluster")
	return nil
}
