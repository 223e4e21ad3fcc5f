package gateway

import (
	"context"
	"fmt"
	"net/http"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// lagTrio is a trio whose replicas can be held behind the leader one at a time
// (replicaHold), that counts each node's catch-ups, with lagging a node that does
// not lead.
type lagTrio struct {
	tc       *testCluster
	ldr      *testServer
	lagging  *testServer
	hold     *replicaHold // lagging's
	catching *catchUps    // lagging's
	li       int
}

func newLagTrio(t *testing.T) *lagTrio {
	t.Helper()
	holds := map[int]*replicaHold{1: {}, 2: {}, 3: {}}
	catching := map[int]*catchUps{1: newCatchUps(), 2: newCatchUps(), 3: newCatchUps()}
	tc := newTestClusterWith(t, 3, func(i int, c *Config) {
		c.Policy = zonePolicy{}
		c.Labels = map[string]string{"zone": "a"}
		if i == 3 {
			c.Labels = map[string]string{"zone": "b"}
		}
		// The held replica cannot renew its lease past a table change: a lease far
		// longer than the test keeps it serving.
		c.LeaseTTL = 10 * time.Second
		c.beforeBatches = holds[i].wait
		c.onCatchUp = catching[i].hook
	})
	lt := &lagTrio{tc: tc, ldr: tc.leader(), lagging: tc.nodes[0], li: 1}
	if lt.lagging == lt.ldr { // the held replica must not lead: the leader's commits wait for its own
		lt.lagging, lt.li = tc.nodes[1], 2
	}
	lt.hold, lt.catching = holds[lt.li], catching[lt.li]
	t.Cleanup(lt.hold.open) // before the cluster's cleanup shuts the nodes down
	return lt
}

// holdBehind holds the lagging replica before an entry of records the leader
// commits now (an empty write): it applies nothing committed after it until let go.
func (lt *lagTrio) holdBehind(t *testing.T) {
	t.Helper()
	lt.hold.shut()
	ctx, cancel := context.WithTimeout(context.Background(), clusterPatience)
	defer cancel()
	if err := lt.ldr.srv.cluster.CatchUp(ctx); err != nil {
		t.Fatalf("catch up on the leader: %v", err)
	}
}

// catchUpsOf returns ts's catch-ups so far, by how they went.
func catchUpsOf(ts *testServer) map[string]float64 {
	out := map[string]float64{}
	for _, v := range []string{catchUpReadIndex, catchUpWrite, catchUpFailed} {
		out[v] = testutil.ToFloat64(ts.srv.fwd.metrics.catchUps.WithLabelValues(v))
	}
	return out
}

// TestClusterUnknownSandboxesShareCatchUps: N requests for sandboxes that do not
// exist, all owned by a follower whose replica is held behind, come while that
// node's first catch-up cannot finish. They share catch-ups: the first request's,
// and one more that begins after all the others have joined it (one that began
// before a request may miss what the request must see), so two in all, not N. All
// are answered 404 once the replica is let go. Without sharing, N catch-ups.
func TestClusterUnknownSandboxesShareCatchUps(t *testing.T) {
	lt := newLagTrio(t)
	const n = 12 // within catchUps.seen's buffer
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, idOwnedBy(t, lt.lagging, fmt.Sprintf("share-%d", i)))
	}
	before := catchUpsOf(lt.lagging)
	waits := testutil.ToFloat64(lt.lagging.srv.fwd.metrics.catchUpWaits)
	lt.holdBehind(t)

	type result struct {
		r   response
		err error
	}
	done := make(chan result, n)
	for _, id := range ids {
		go func() {
			r, err := lt.lagging.getWithin("/v1/sandboxes/"+id, clusterPatience)
			done <- result{r, err}
		}()
	}
	for i := 0; i < n; i++ { // every request has joined a catch-up
		select {
		case <-lt.catching.seen:
		case res := <-done:
			t.Fatalf("a request answered %d %s %v before the held replica was let go", res.r.status, res.r.body, res.err)
		case <-time.After(clusterPatience):
			t.Fatalf("%d of %d requests joined a catch-up within %v", i, n, clusterPatience)
		}
	}
	lt.hold.open()
	for i := 0; i < n; i++ {
		var res result
		select {
		case res = <-done:
		case <-time.After(clusterPatience):
			t.Fatalf("%d of %d requests answered within %v of the replica let go", i, n, clusterPatience)
		}
		if res.err != nil || res.r.status != http.StatusNotFound || res.r.errorCode(t) != codeNotFound {
			t.Fatalf("GET of a sandbox that does not exist: %d %s %v, want 404 not_found", res.r.status, res.r.body, res.err)
		}
	}
	after := catchUpsOf(lt.lagging)
	rounds := 0.0
	for v, c := range after {
		rounds += c - before[v]
	}
	if rounds != 2 {
		t.Fatalf("%d concurrent unknown requests cost %v catch-ups (%v, was %v), want 2", n, rounds, after, before)
	}
	if w := testutil.ToFloat64(lt.lagging.srv.fwd.metrics.catchUpWaits) - waits; w != n {
		t.Fatalf("%v requests waited for a catch-up, want %d", w, n)
	}
}

// TestClusterReadIndexCatchUp: the lag of TestClusterReadWhileReplicaLags (a sandbox
// pinned to n3 read through a node whose replica is held before the pin) is
// answered 200 by n3 after a catch-up through a read index, not a write: it counts
// as read_index (cluster.Node.ReadBarrier reported no write; that such a barrier
// adds no entry to the log is TestReadBarrierWaitsForLaggingReplica's, in cluster,
// where no sandbox writes records meanwhile).
func TestClusterReadIndexCatchUp(t *testing.T) {
	lt := newLagTrio(t)
	id := idOwnedBy(t, lt.lagging, "ri")
	lt.holdBehind(t)
	ctx, cancel := context.WithTimeout(context.Background(), clusterPatience)
	defer cancel()
	a, err := lt.ldr.srv.cluster.Pin(ctx, id, map[string]string{"zone": "b"})
	if err != nil || a.Owner != "n3" {
		t.Fatalf("pin %s: %+v %v, want it on n3", id, a, err)
	}
	var info sandboxJSON
	lt.ldr.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": id, "labels": map[string]string{"want": "b"}}).json(t, &info)
	if owner, _, _ := lt.lagging.srv.cluster.Owner(id); string(owner) != lt.lagging.srv.cfg.NodeID {
		t.Fatalf("%s's replica already places %s on %s: the hold did not hold", lt.lagging.srv.cfg.NodeID, id, owner)
	}
	before := catchUpsOf(lt.lagging)

	done := make(chan response, 1)
	go func() {
		r, err := lt.lagging.getWithin("/v1/sandboxes/"+id, clusterPatience)
		if err != nil {
			r = response{status: -1, body: []byte(err.Error())}
		}
		done <- r
	}()
	select {
	case <-lt.catching.seen:
	case r := <-done:
		t.Fatalf("GET through the lagging node answered %d %s without catching up", r.status, r.body)
	case <-time.After(clusterPatience):
		t.Fatalf("GET through the lagging node neither caught up nor answered within %v", clusterPatience)
	}
	lt.hold.open()
	var r response
	select {
	case r = <-done:
	case <-time.After(clusterPatience):
		t.Fatalf("GET through the lagging node not answered within %v of the replica let go", clusterPatience)
	}
	if r.status != http.StatusOK {
		t.Fatalf("GET through the lagging node: %d %s, want 200", r.status, r.body)
	}
	r.json(t, &info)
	if info.Node != "n3" || info.ID != id {
		t.Fatalf("read through the lagging node: %+v, want %s on n3", info, id)
	}
	after := catchUpsOf(lt.lagging)
	if after[catchUpReadIndex]-before[catchUpReadIndex] != 1 || after[catchUpWrite] != before[catchUpWrite] {
		t.Fatalf("catch-ups %v (were %v): want one read_index and no write", after, before)
	}
}

// TestCatchUpGroupHammer: many requests join catch-ups at once, again and again.
// Every request gets a catch-up that began after it joined, at most one runs at a
// time, and requests share them (fewer catch-ups than requests).
func TestCatchUpGroupHammer(t *testing.T) {
	t.Parallel()
	const workers, each = 8, 300
	var (
		g        catchUpGroup
		begun    atomic.Uint64 // catch-ups begun so far
		inFlight atomic.Int32
		mu       sync.Mutex
		beganAt  = map[*catchUpRound]uint64{}
		runners  sync.WaitGroup
	)
	run := func(r *catchUpRound) {
		defer runners.Done()
		for r != nil {
			mu.Lock()
			beganAt[r] = begun.Add(1)
			mu.Unlock()
			if n := inFlight.Add(1); n != 1 {
				t.Errorf("%d catch-ups ran at once", n)
			}
			goruntime.Gosched() // the catch-up's work: let joiners in meanwhile
			inFlight.Add(-1)
			r = g.ended(r, nil)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				before := begun.Load()
				r := g.join(func(r *catchUpRound) bool {
					runners.Add(1)
					go run(r)
					return true
				})
				<-r.done
				mu.Lock()
				at := beganAt[r]
				mu.Unlock()
				if at <= before {
					t.Errorf("a request joined catch-up #%d, begun before it joined (%d had begun)", at, before)
					return
				}
			}
		}()
	}
	wg.Wait()
	runners.Wait()
	if n := begun.Load(); n >= workers*each {
		t.Errorf("%d requests cost %d catch-ups: none shared", workers*each, n)
	}
	t.Logf("%d requests, %d catch-ups", workers*each, begun.Load())
	if g.running || g.next != nil {
		t.Errorf("catch-ups left behind: running %v, next %v", g.running, g.next)
	}
}
