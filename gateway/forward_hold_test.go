package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestForwardHoldThenServe: the owner of a sandbox cannot be reached (its address
// refuses connections); a create for it through another node is held while nobody
// can serve it; the owner then shuts down, and the node its partition moves to once
// the dead node's lease has run out answers the held create.
func TestForwardHoldThenServe(t *testing.T) {
	ip := newInterposer(t)
	tr := newTrio(t, func(i int, c *Config) {
		if i == 2 {
			c.Listen = ip.addr // node a advertises the interposer
		}
		c.LeaseTTL = 300 * time.Millisecond
		c.RaftMultiplier = 0.1           // elections well inside the short lease
		c.HoldTimeout = 60 * time.Second // liveness is asserted generously: a loaded machine
	})
	a, b := tr.node("a"), tr.node("b")
	ip.to(a)
	sb := tr.ownedBy("hold", "a")
	_ = ip.srv.Close() // a's address refuses connections; a still holds its lease
	began := time.Now()
	done := make(chan response, 1)
	go func() {
		r, err := b.send(testToken, "POST", "/v1/sandboxes", map[string]any{"id": sb})
		if err != nil {
			r.body = []byte(err.Error())
		}
		done <- r
	}()
	eventually(t, 30*time.Second, "the create to be held", func() bool {
		return testutil.ToFloat64(b.srv.fwd.metrics.heldNow) == 1
	})
	shutdown(t, a)
	r := <-done
	t.Logf("held for %v", time.Since(began))
	retried := false
	if after := r.header.Get("Retry-After"); r.status == http.StatusServiceUnavailable && after != "" {
		// Served once the partition moved, the create met a raft election (a's
		// shutdown, on a loaded machine): 503 with its outcome unknown. A client
		// sends it again; one that landed is then found (200, the same sandbox).
		t.Logf("held create: 503 with Retry-After %s: %s; sent again", after, r.body)
		time.Sleep(time.Second)
		r, _ = b.sendSettled("POST", "/v1/sandboxes", map[string]any{"id": sb})
		retried = true
	}
	if r.status != http.StatusCreated && !(retried && r.status == http.StatusOK) {
		t.Fatalf("held create: %d %s", r.status, r.body)
	}
	var info sandboxJSON
	r.json(t, &info)
	if info.Node == "a" || info.Node == "" {
		t.Fatalf("created on %q after a shut down", info.Node)
	}
	if n := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardHeld)); n < 1 || (!retried && n != 1) {
		t.Fatalf("held %v requests, want 1 (at least 1 when sent again)", n)
	}
	if n := testutil.ToFloat64(b.srv.fwd.metrics.heldNow); n != 0 {
		t.Fatalf("%v requests still counted as held", n)
	}
}

// TestForwardHoldTimeout: with nobody to serve a sandbox for longer than the hold
// timeout (its owner's address refuses connections, and the owner keeps its lease,
// so its partitions stay), a request is held for the hold timeout, then answered 503
// unavailable with Retry-After.
func TestForwardHoldTimeout(t *testing.T) {
	const hold = 300 * time.Millisecond
	ip := newInterposer(t)
	tr := newTrio(t, func(i int, c *Config) {
		if i == 2 {
			c.Listen = ip.addr // node a
		}
		c.HoldTimeout = hold
	})
	a, b := tr.node("a"), tr.node("b")
	ip.to(a)
	sb := tr.ownedBy("timeout", "a")
	a.sandbox(sb)
	_ = ip.srv.Close()
	began := time.Now()
	r := b.do("GET", "/v1/sandboxes/"+sb, nil)
	if took := time.Since(began); took < hold {
		t.Fatalf("answered after %v, before the hold timeout", took)
	}
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") != "1" {
		t.Fatalf("after the hold: %d Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if n := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardUnavailable)); n != 1 {
		t.Fatalf("%v unavailable forwards, want 1", n)
	}
	if r := a.do("GET", "/v1/sandboxes/"+sb, nil); r.status != http.StatusOK {
		t.Fatalf("the owner itself: %d", r.status)
	}
}

// shutdown stops a node of a trio now (its cleanup's Shutdown is then a no-op).
func shutdown(t *testing.T, ts *testServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// interposer stands at a node's advertised HTTP address in front of its real
// listener: it answers the next request 421 with a given table index when told to,
// or 503 as a fenced owner, or breaks it off after its 100 Continue, and passes
// everything else on.
type interposer struct {
	srv       *http.Server
	addr      string
	target    atomic.Pointer[httputil.ReverseProxy]
	misdirect atomic.Uint64 // when not 0: answer the next request 421 with this index
	fenced    atomic.Bool   // when set: answer the next request 503 as an owner without a lease
	broken    atomic.Bool   // when set: read some of the next request's body (100 Continue) and break the connection
	served    atomic.Bool   // when set: pass the next request on, then break the connection instead of answering
	refused   chan struct{} // a request was answered 421 or 503
	passed    func()        // called for each request passed on
}

// interposedTrio starts a trio whose node a (the last to join, so its partitions
// stay) advertises an interposer passing its traffic on, and returns the interposer,
// the trio, node b to send through and node a.
func interposedTrio(t *testing.T) (ip *interposer, tr *trio, via, owner *testServer) {
	ip = newInterposer(t)
	tr = newTrio(t, func(i int, c *Config) {
		if i == 2 {
			c.Listen = ip.addr
		}
	})
	via, owner = tr.node("b"), tr.node("a")
	ip.to(owner)
	return ip, tr, via, owner
}

func newInterposer(t *testing.T) *interposer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ip := &interposer{addr: ln.Addr().String(), refused: make(chan struct{}, 1)}
	ip.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if idx := ip.misdirect.Swap(0); idx != 0 {
			w.Header().Set(indexHeader, strconv.FormatUint(idx, 10))
			w.WriteHeader(http.StatusMisdirectedRequest)
			ip.refused <- struct{}{}
			return
		}
		if ip.fenced.Swap(false) {
			w.Header().Set(holdHeader, "lease")
			w.WriteHeader(http.StatusServiceUnavailable)
			ip.refused <- struct{}{}
			return
		}
		if ip.broken.Swap(false) {
			_, _ = io.ReadFull(r.Body, make([]byte, 64<<10))
			ip.refused <- struct{}{}
			panic(http.ErrAbortHandler)
		}
		if ip.passed != nil {
			ip.passed()
		}
		if ip.served.Swap(false) {
			ip.target.Load().ServeHTTP(httptest.NewRecorder(), r)
			ip.refused <- struct{}{}
			panic(http.ErrAbortHandler)
		}
		ip.target.Load().ServeHTTP(w, r)
	})}
	go func() { _ = ip.srv.Serve(ln) }()
	t.Cleanup(func() { _ = ip.srv.Close() })
	return ip
}

// to passes what the interposer does not refuse on to ts.
func (ip *interposer) to(ts *testServer) {
	u, _ := url.Parse(ts.url)
	ip.target.Store(httputil.NewSingleHostReverseProxy(u))
}

// TestForwardMisdirectedRetry: an owner that answers 421 with a table index this node
// has not reached makes it wait until its table is there and send the request again,
// once; the client sees only the answer to the retry.
func TestForwardMisdirectedRetry(t *testing.T) {
	ip, tr, via, owner := interposedTrio(t)
	var seenIndex atomic.Uint64
	ip.passed = func() { seenIndex.Store(via.srv.cluster.TableIndex()) }
	sb := tr.ownedBy("mis", "a")
	owner.sandbox(sb)

	want := via.srv.cluster.TableIndex() + 1 // an entry that does not exist yet
	ip.misdirect.Store(want)
	done := make(chan response, 1)
	go func() {
		r, err := via.send(testToken, "GET", "/v1/sandboxes/"+sb, nil)
		if err != nil {
			r.body = []byte(err.Error())
		}
		done <- r
	}()
	select {
	case <-ip.refused:
	case <-time.After(30 * time.Second):
		t.Fatal("the forward never reached the owner's address")
	}
	tr.pin(tr.ownedBy("other", "c"), "c") // one more entry: the sender's table passes want
	r := <-done
	if r.status != http.StatusOK {
		t.Fatalf("after a 421: %d %s", r.status, r.body)
	}
	if got := seenIndex.Load(); got < want {
		t.Fatalf("retried with the table at %d, before it reached %d", got, want)
	}
	if n := testutil.ToFloat64(via.srv.fwd.metrics.forwards.WithLabelValues(forwardRetry421)); n != 1 {
		t.Fatalf("%v retries after 421, want 1", n)
	}
}

// TestForwardHoldOnFencedOwner: an owner that answers 503 with the hold header (its
// lease lapsed) makes the sender hold the request and send it again; the client sees
// only the answer to the retry, and a POST body goes again whole.
func TestForwardHoldOnFencedOwner(t *testing.T) {
	ip, tr, via, owner := interposedTrio(t)
	sb := tr.ownedBy("fenced", "a")
	owner.sandbox(sb)
	ip.fenced.Store(true)
	var ex execJSON
	via.must(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": "echo again"}).json(t, &ex)
	select {
	case <-ip.refused:
	default:
		t.Fatal("the owner's 503 was never sent")
	}
	if ex.Stdout != "again\n" {
		t.Fatalf("exec after a hold: %+v", ex)
	}
	if n := testutil.ToFloat64(via.srv.fwd.metrics.forwards.WithLabelValues(forwardHeld)); n != 1 {
		t.Fatalf("held %v requests, want 1", n)
	}

	// A body over the buffering bound is streamed once: sent with Expect:
	// 100-continue, so the owner's refusal comes before any of it, and it can still go.
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	ip.fenced.Store(true)
	via.must(http.StatusNoContent, "PUT", "/v1/sandboxes/"+sb+"/files?path=big", data)
	select {
	case <-ip.refused:
	default:
		t.Fatal("the owner's 503 was never sent")
	}
	if got := owner.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/files?path=big", nil).body; !bytes.Equal(got, data) {
		t.Fatalf("the streamed upload sent again: %d bytes, not the same", len(got))
	}
}

// TestForwardFailoverUnderLoad: clients create sandboxes through two nodes at a
// steady pace while the third, the one that owns the most partitions (the
// bootstrapping node: the others get theirs at the rebalance rate), shuts down.
// Every request has exactly one outcome: 201, or 503 unavailable with Retry-After (an
// owner's actor refuses a turn when its lease lapsed just after the forwarding check,
// which an election under load can cause). Creates for the stopped node's ids are
// held until its partitions move, then made on their new owner.
func TestForwardFailoverUnderLoad(t *testing.T) {
	tr := newTrio(t, func(_ int, c *Config) {
		c.LeaseTTL = time.Second
		c.HoldTimeout = 60 * time.Second
	})
	count := map[string]int{}
	for _, p := range tr.nodes[0].srv.cluster.Table() {
		count[string(p.Owner)]++
	}
	var a, b, c *testServer
	for _, n := range tr.nodes {
		if a == nil || count[string(n.srv.cluster.ID())] > count[string(a.srv.cluster.ID())] {
			a = n
		}
	}
	for _, n := range tr.nodes {
		switch {
		case n == a:
		case b == nil:
			b = n
		default:
			c = n
		}
	}
	type outcome struct {
		id     string
		status int
		header http.Header
		err    error
	}
	stop := make(chan struct{})
	results := make(chan outcome, 4096)
	var wg sync.WaitGroup
	for w, via := range []*testServer{b, c, b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace := time.NewTicker(10 * time.Millisecond) // a steady load, under the tenant's cap
			defer pace.Stop()
			for i := 0; i < 300; i++ {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				id := fmt.Sprintf("load-%d-%d", w, i)
				r, err := via.send(testToken, "POST", "/v1/sandboxes", map[string]any{"id": id})
				if err == nil && r.status != http.StatusCreated {
					err = fmt.Errorf("%s", r.body)
				}
				results <- outcome{id, r.status, r.header, err}
			}
		}()
	}
	owned := func() int {
		n := 0
		for _, p := range b.srv.cluster.Table() {
			if p.Owner == a.srv.cluster.ID() {
				n++
			}
		}
		return n
	}
	eventually(t, 30*time.Second, "requests before the shutdown", func() bool { return len(results) >= 20 && owned() > 0 })
	shutdown(t, a)
	n := len(results)
	eventually(t, 60*time.Second, "requests after the shutdown, and a's partitions moved", func() bool {
		return len(results) >= min(n+40, 4*300) && owned() == 0
	})
	close(stop)
	wg.Wait()
	close(results)
	total, refused := 0, 0
	for o := range results {
		total++
		switch {
		case o.status == http.StatusCreated:
		case o.status == http.StatusServiceUnavailable && o.header.Get("Retry-After") != "":
			refused++
			t.Logf("create %s: 503 %v", o.id, o.err)
		default:
			t.Errorf("create %s: %d %v", o.id, o.status, o.err)
		}
	}
	held := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardHeld)) +
		testutil.ToFloat64(c.srv.fwd.metrics.forwards.WithLabelValues(forwardHeld))
	t.Logf("%d creates, %d answered 503 with Retry-After, %v held at least once", total, refused, held)
	if held == 0 {
		t.Fatal("no create was held: the failover was not exercised")
	}
	if refused > total/10 {
		t.Fatalf("%d of %d creates refused", refused, total)
	}
}

// TestForwardedLongPollEndsAtShutdown: a node that shuts down does not wait out its
// grace for a long-poll it forwarded to an owner that is not shutting down: the
// client is answered 503 with Retry-After at once, and the owner goes on serving.
func TestForwardedLongPollEndsAtShutdown(t *testing.T) {
	ip := newInterposer(t)
	tr := newTrio(t, func(i int, c *Config) {
		switch i {
		case 1: // node b, the forwarding one: a grace no test should wait out
			c.ShutdownGrace = 2 * time.Minute
		case 2: // node a, the owner, behind the interposer
			c.Listen = ip.addr
		}
	})
	via, owner := tr.node("b"), tr.node("a")
	ip.to(owner)
	arrived := make(chan struct{}, 8)
	ip.passed = func() {
		select {
		case arrived <- struct{}{}:
		default:
		}
	}
	sb := tr.ownedBy("lp", "a")
	owner.sandbox(sb)
	var p processJSON
	owner.must(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes", map[string]any{"command": "sleep 300"}).json(t, &p)
	for len(arrived) > 0 { // what reached the owner before the long-poll
		<-arrived
	}
	done := make(chan response, 1)
	go func() {
		r, err := via.send(testToken, "GET", "/v1/sandboxes/"+sb+"/processes/"+p.ID+"?wait_ms=240000", nil)
		if err != nil {
			r = response{status: -1, body: []byte(err.Error())}
		}
		done <- r
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the long-poll did not reach the owner")
	}
	began := time.Now()
	shutdown(t, via)
	if took := time.Since(began); took > time.Minute {
		t.Fatalf("the shutdown took %v: it waited for the forwarded long-poll", took)
	}
	select {
	case r := <-done:
		if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") == "" {
			t.Fatalf("the long-poll cut off by the shutdown: %d Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long-poll was not answered")
	}
	owner.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/processes/"+p.ID, nil)
}
