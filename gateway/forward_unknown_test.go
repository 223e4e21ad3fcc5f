package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// replicaHold holds a cluster replica before each entry of sandbox records while it
// is shut (cluster.Config.BeforeBatches): the replica applies nothing after it, of
// any kind, until it opens.
type replicaHold struct {
	mu sync.Mutex
	ch chan struct{}
}

func (h *replicaHold) shut() {
	h.mu.Lock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	h.mu.Unlock()
}

func (h *replicaHold) open() {
	h.mu.Lock()
	if h.ch != nil {
		close(h.ch)
		h.ch = nil
	}
	h.mu.Unlock()
}

func (h *replicaHold) wait(uint64) {
	h.mu.Lock()
	ch := h.ch
	h.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// catchUps counts, per sandbox, the catch-ups of one node before serving a sandbox
// its replica did not know (Config.onCatchUp), and tells each one on seen.
type catchUps struct {
	mu    sync.Mutex
	count map[string]int
	seen  chan string // buffered; a full channel drops the news, not the count
}

func newCatchUps() *catchUps {
	return &catchUps{count: map[string]int{}, seen: make(chan string, 16)}
}

func (c *catchUps) hook(sb string) {
	c.mu.Lock()
	c.count[sb]++
	c.mu.Unlock()
	select {
	case c.seen <- sb:
	default:
	}
}

func (c *catchUps) of(sb string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[sb]
}

// idOwnedBy returns an id with prefix that ts's table gives to ts by its partition.
func idOwnedBy(t testing.TB, ts *testServer, prefix string) string {
	t.Helper()
	for i := 0; i < 100000; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if owner, _, ok := ts.srv.cluster.Owner(id); ok && string(owner) == ts.srv.cfg.NodeID {
			return id
		}
	}
	t.Fatalf("no id with prefix %s owned by %s", prefix, ts.srv.cfg.NodeID)
	return ""
}

// idOwnedByAll is idOwnedBy once every node of tc places the id on ts too: just after
// a cluster formed, one node's table may still lag another's, and a node that takes
// itself for the owner catches up where the test expects none.
func idOwnedByAll(t testing.TB, tc *testCluster, ts *testServer, prefix string) string {
	t.Helper()
	var id string
	eventually(t, clusterPatience, "every node to place an id on "+ts.srv.cfg.NodeID, func() bool {
		id = idOwnedBy(t, ts, prefix)
		for _, n := range tc.nodes {
			if owner, _, ok := n.srv.cluster.Owner(id); !ok || string(owner) != ts.srv.cfg.NodeID {
				return false
			}
		}
		return true
	})
	return id
}

// TestClusterReadWhileReplicaLags: a sandbox pinned to n3 (zone b) is read through the
// node that owns its id by partition while that node's replica is held before the
// pin. The node does not know the sandbox, so it catches up with the leader before it
// serves (unknownHere): the GET waits for the replica (let go once the catch-up has
// begun) and is served by n3, 200. Without the catch-up it is served from the
// lagging replica: 404 for a sandbox that exists.
func TestClusterReadWhileReplicaLags(t *testing.T) {
	holds := map[int]*replicaHold{1: {}, 2: {}, 3: {}}
	catching := map[int]*catchUps{1: newCatchUps(), 2: newCatchUps(), 3: newCatchUps()}
	tc := newTestClusterWith(t, 3, func(i int, c *Config) {
		c.Policy = zonePolicy{}
		c.Labels = map[string]string{"zone": "a"}
		if i == 3 {
			c.Labels = map[string]string{"zone": "b"}
		}
		// The held replica cannot renew its lease past the pin: a lease far longer
		// than the test keeps it serving.
		c.LeaseTTL = 10 * time.Second
		c.beforeBatches = holds[i].wait
		c.onCatchUp = catching[i].hook
	})
	t.Cleanup(func() { // before the cluster's cleanup shuts the nodes down
		for _, h := range holds {
			h.open()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), clusterPatience)
	defer cancel()
	// An entry of records, then the pin: the lagging replica is held at the first,
	// so the pin after it in the log is not applied there. An election in between
	// (a loaded machine) loses the pin's outcome, and may make the held replica
	// lead: the hold is let go and the set-up made again, with a fresh id.
	var (
		ldr, lagging *testServer
		h            *replicaHold
		li           int
		id           string
	)
	for try := 1; ; try++ {
		ldr = tc.leader()
		lagging, li = tc.nodes[0], 1
		if lagging == ldr { // the held replica must not lead: the leader's commits wait for its own
			lagging, li = tc.nodes[1], 2
		}
		id = idOwnedBy(t, lagging, fmt.Sprintf("lag%d", try))
		h = holds[li]
		h.shut()
		err := ldr.srv.cluster.CatchUp(ctx)
		var a cluster.Assignment
		if err == nil {
			a, err = ldr.srv.cluster.Pin(ctx, id, map[string]string{"zone": "b"})
		}
		if err == nil && a.Owner != "n3" {
			t.Fatalf("pin %s: %+v, want it on n3", id, a)
		}
		if err == nil && ldr.srv.cluster.IsLeader() {
			break
		}
		h.open()
		if try == settleTries {
			t.Fatalf("pin %s through the leader: %v (try %d)", id, err, try)
		}
		t.Logf("pin %s through %s: %v, leading %v (try %d): again", id, ldr.srv.cfg.NodeID, err, ldr.srv.cluster.IsLeader(), try)
	}
	var info sandboxJSON
	ldr.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": id, "labels": map[string]string{"want": "b"}}).json(t, &info)
	if info.Node != "n3" {
		t.Fatalf("created on %q, want n3", info.Node)
	}
	if owner, _, _ := lagging.srv.cluster.Owner(id); string(owner) != lagging.srv.cfg.NodeID {
		t.Fatalf("%s's replica already places %s on %s: the hold did not hold", lagging.srv.cfg.NodeID, id, owner)
	}

	type result struct {
		r   response
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := lagging.send(testToken, "GET", "/v1/sandboxes/"+id, nil)
		done <- result{r, err}
	}()
	select {
	case sb := <-catching[li].seen:
		if sb != id {
			t.Fatalf("%s caught up for %q, want %s", lagging.srv.cfg.NodeID, sb, id)
		}
		h.open()
	case res := <-done:
		t.Fatalf("GET through %s, whose replica lacks the pin, answered %d without catching up: %s %v",
			lagging.srv.cfg.NodeID, res.r.status, res.r.body, res.err)
	case <-time.After(clusterPatience):
		t.Fatalf("GET through %s neither caught up nor answered within %v", lagging.srv.cfg.NodeID, clusterPatience)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(clusterPatience):
		t.Fatalf("GET through %s not answered within %v of the replica let go", lagging.srv.cfg.NodeID, clusterPatience)
	}
	if res.err != nil || res.r.status != http.StatusOK {
		t.Fatalf("GET through %s after catching up: %d %s %v, want 200", lagging.srv.cfg.NodeID, res.r.status, res.r.body, res.err)
	}
	res.r.json(t, &info)
	if info.Node != "n3" || info.ID != id {
		t.Fatalf("read through %s: %+v, want %s on n3", lagging.srv.cfg.NodeID, info, id)
	}
	if n := catching[li].of(id); n != 1 {
		t.Fatalf("%s caught up %d times for one read, want once", lagging.srv.cfg.NodeID, n)
	}
}

// TestClusterUnknownSandbox404: a sandbox that does not exist is 404 not_found through
// every node of a trio, whichever node owns its id, within the hold timeout (the
// catch-up does not loop, nor hold the request), after exactly one catch-up, on the
// owner.
func TestClusterUnknownSandbox404(t *testing.T) {
	catching := map[int]*catchUps{1: newCatchUps(), 2: newCatchUps(), 3: newCatchUps()}
	tc := newTestClusterWith(t, 3, func(i int, c *Config) { c.onCatchUp = catching[i].hook })
	for oi, owner := range tc.nodes {
		for vi, via := range tc.nodes {
			name := fmt.Sprintf("owner %s via %s", owner.srv.cfg.NodeID, via.srv.cfg.NodeID)
			t.Run(name, func(t *testing.T) {
				id := idOwnedByAll(t, tc, owner, fmt.Sprintf("none-%d-%d", oi, vi))
				hold := via.srv.cfg.HoldTimeout
				began := time.Now()
				r, err := via.getWithin("/v1/sandboxes/"+id, 2*hold)
				took := time.Since(began)
				if err != nil {
					t.Fatalf("GET %s: %v", id, err)
				}
				if r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
					t.Fatalf("GET %s: %d %s, want 404 not_found", id, r.status, r.body)
				}
				if took >= hold {
					t.Fatalf("GET %s took %v, not under the hold timeout %v", id, took, hold)
				}
				for i, ts := range tc.nodes {
					want := 0
					if i == oi {
						want = 1
					}
					if got := catching[i+1].of(id); got != want {
						t.Errorf("%s caught up %d times for %s, want %d", ts.srv.cfg.NodeID, got, id, want)
					}
				}
			})
		}
	}
}

// TestUnknownSandboxAloneNoCatchUp: a node alone in its cluster answers 404 for a
// sandbox that does not exist without catching up: nothing can lag, and a write
// through the log per 404 would be waste.
func TestUnknownSandboxAloneNoCatchUp(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.onCatchUp = func(string) { calls.Add(1) }
	}})
	for _, method := range []string{"GET", "DELETE"} {
		r := ts.do(method, "/v1/sandboxes/nowhere", nil)
		if r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
			t.Fatalf("%s: %d %s, want 404 not_found", method, r.status, r.body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("a node alone caught up %d times", n)
	}
}

// getWithin GETs path with the test token, giving up after d: a request that would
// never be answered fails the test instead of hanging it.
func (ts *testServer) getWithin(path string, d time.Duration) (response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+path, nil)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("GET %s: read body: %w", path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}
