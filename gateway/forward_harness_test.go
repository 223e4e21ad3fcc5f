package gateway

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// trio is a cluster of three gateway nodes on loopback, "c", "b" and "a", each with
// the label node=<its id>: real raft, real HTTP, real processes. Tests that start one
// do not call t.Parallel: three raft nodes at 0.1× timeouts need the CPU to keep their
// leases, and on two cores beside the parallel suite they would lapse now and then.
type trio struct {
	t     testing.TB
	nodes []*testServer
}

// newTrio starts node c (i 0, which bootstraps), then b (i 1) and a (i 2) joining
// it, adds them through the leader and waits until every node holds a lease and every
// node's table gives each node partitions. mod, when set, changes each node's config.
//
// Tests use a, the last to join, as the owner of their sandboxes: the leader goes on
// moving partitions to the newer members at its rebalance rate for a while, but only
// away from the older ones, so what a owns stays with a while the members stay.
func newTrio(t testing.TB, mod func(i int, c *Config)) *trio {
	t.Helper()
	tr := &trio{t: t}
	logs := newTrioLog(t)
	for i, id := range []string{"c", "b", "a"} {
		opts := &serverOptions{config: func(c *Config) {
			c.NodeID = id
			c.Labels = map[string]string{"node": id}
			c.RaftMultiplier = clusterRaftMultiplier
			c.Logger = logs.logger(id)
			if i > 0 {
				c.Join = tr.nodes[0].url
			}
			if mod != nil {
				mod(i, c)
			}
		}}
		tr.nodes = append(tr.nodes, newTestServer(t, opts))
	}
	for _, n := range tr.nodes[1:] {
		tr.onLeader(func(l *cluster.Node) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return l.Join(ctx, n.srv.cluster.Self())
		})
		select {
		case <-n.srv.hooks.firstLease:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s got no lease", n.srv.cluster.ID())
		}
	}
	eventually(t, 60*time.Second, "every node to own partitions in every table", func() bool {
		idx := tr.nodes[0].srv.cluster.TableIndex()
		for _, n := range tr.nodes {
			if n.srv.cluster.TableIndex() != idx {
				return false
			}
			owners := map[cluster.NodeID]bool{}
			for _, a := range n.srv.cluster.Table() {
				if a.State == cluster.PartitionActive {
					owners[a.Owner] = true
				}
			}
			if len(owners) != 3 || !owners["a"] || !owners["b"] || !owners["c"] {
				return false
			}
		}
		return true
	})
	return tr
}

// node returns the node with id.
func (tr *trio) node(id string) *testServer {
	for _, n := range tr.nodes {
		if string(n.srv.cluster.ID()) == id {
			return n
		}
	}
	tr.t.Fatalf("no node %s", id)
	return nil
}

// onLeader runs a leader-only call on whichever node leads, retrying while
// leadership moves.
func (tr *trio) onLeader(call func(l *cluster.Node) error) {
	tr.t.Helper()
	var err error
	eventually(tr.t, 60*time.Second, "a leader-only call", func() bool {
		for _, n := range tr.nodes {
			if n.srv.closedForTest() || !n.srv.cluster.IsLeader() {
				continue
			}
			if err = call(n.srv.cluster); err == nil {
				return true
			}
			tr.t.Logf("leader call: %v (retrying)", err)
		}
		return false
	})
}

// ownedBy returns a sandbox id with prefix that every live node's table gives to
// node id.
func (tr *trio) ownedBy(prefix, id string) string {
	tr.t.Helper()
	for i := 0; i < 10000; i++ {
		sb := fmt.Sprintf("%s-%d", prefix, i)
		if owner, _, ok := tr.nodes[0].srv.cluster.Owner(sb); ok && string(owner) == id {
			return sb
		}
	}
	tr.t.Fatalf("no id owned by %s", id)
	return ""
}

// pin places sandbox sb on node id (by its label) and waits until every live node's
// table says so.
func (tr *trio) pin(sb, id string) {
	tr.t.Helper()
	tr.onLeader(func(l *cluster.Node) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := l.Pin(ctx, sb, map[string]string{"node": id})
		return err
	})
	eventually(tr.t, 30*time.Second, sb+" to be placed on "+id, func() bool {
		for _, n := range tr.nodes {
			if n.srv.closedForTest() {
				continue
			}
			if owner, _, ok := n.srv.cluster.Owner(sb); !ok || string(owner) != id {
				return false
			}
		}
		return true
	})
}

// closedForTest reports whether Shutdown was called.
func (s *Server) closedForTest() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// settleTries bounds mustSettled's tries of one request.
const settleTries = 8

// mustSettled is must as a client of a cluster sends (sendSettled). A create whose
// earlier try did land finds it on the retry: 200 with the same thing is then
// accepted for a wanted 201. Every other status fails the test as must does.
func (ts *testServer) mustSettled(want int, method, path string, body any) response {
	ts.t.Helper()
	r, retried := ts.sendSettled(method, path, body)
	if r.status != want && !(retried && want == http.StatusCreated && r.status == http.StatusOK) {
		ts.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// sendSettled sends a request as a client of a cluster does: a 503 with Retry-After
// (a write that met a raft election on a loaded machine, its outcome unknown, or no
// leader for a moment) is sent again after the Retry-After, up to settleTries
// times. It returns the last answer and whether the request was sent again.
func (ts *testServer) sendSettled(method, path string, body any) (r response, retried bool) {
	ts.t.Helper()
	for try := 1; ; try++ {
		r = ts.do(method, path, body)
		after, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != http.StatusServiceUnavailable || err != nil || after <= 0 || try >= settleTries {
			return r, retried
		}
		ts.t.Logf("%s %s: 503 with Retry-After %d (try %d): %s", method, path, after, try, r.body)
		retried = true
		time.Sleep(time.Duration(after) * time.Second) // the client's back-off the server asked for
	}
}

// trioLog keeps the last lines a trio's nodes logged at Info and above, and every
// request's line, and prints them when the test failed: why a cluster test failed is
// most often there (a workspace stream that failed, a forward that broke, what a
// retried set-up request was answered), and nowhere else. $SANDGATE_TEST_LOG=debug
// sends every line at Debug to stderr as well, as it comes.
type trioLog struct {
	stderr bool
	mu     sync.Mutex
	lines  []string
	lost   int // lines dropped from the front
}

// trioLogLines bounds the lines kept.
const trioLogLines = 400

func newTrioLog(t testing.TB) *trioLog {
	l := &trioLog{stderr: os.Getenv("SANDGATE_TEST_LOG") == "debug"}
	t.Cleanup(func() { // registered before the nodes', so it runs after they shut down
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Logf("the trio's log (%d earlier lines dropped):\n%s", l.lost, strings.Join(l.lines, ""))
	})
	return l
}

// logger returns node id's logger.
func (l *trioLog) logger(id string) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
}

// Write takes one line (a slog handler writes one record at a time).
func (l *trioLog) Write(p []byte) (int, error) {
	if l.stderr {
		_, _ = os.Stderr.Write(p)
	}
	if bytes.Contains(p, []byte("level=DEBUG")) && !bytes.Contains(p, []byte("level=DEBUG msg=request ")) {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == trioLogLines {
		l.lines = l.lines[1:]
		l.lost++
	}
	l.lines = append(l.lines, string(p))
	return len(p), nil
}
