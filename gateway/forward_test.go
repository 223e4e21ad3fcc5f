package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestForwardThroughNonOwner: every kind of request for a sandbox owned by node a
// answers through b and c, which own nothing of it, exactly as a would: REST exec,
// a session's exec, files up (over the buffering bound, so streamed) and down, SSE
// events and process output, and a terminal WebSocket, byte for byte. Requests are
// sent as a cluster's client sends them (mustSettled): a write that met a raft
// election is answered 503 with Retry-After, its outcome unknown, and sent again.
func TestForwardThroughNonOwner(t *testing.T) {
	tr := newTrio(t, nil)
	a, b, c := tr.node("a"), tr.node("b"), tr.node("c")
	sb := tr.ownedBy("fwd", "a")

	var info sandboxJSON
	b.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb}).json(t, &info)
	if info.Node != "a" {
		t.Fatalf("created through b: node %q, want a", info.Node)
	}
	c.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+sb, nil).json(t, &info)
	if info.Node != "a" {
		t.Fatalf("read through c: node %q, want a", info.Node)
	}

	var ex execJSON
	b.mustSettled(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": "printf 'x%.0s' $(seq 1 5000); echo; echo err >&2"}).json(t, &ex)
	if ex.Stdout != strings.Repeat("x", 5000)+"\n" || ex.Stderr != "err\n" || ex.ExitCode != 0 {
		t.Fatalf("exec through b: %+v", ex)
	}

	c.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/sessions", map[string]any{"id": "main"})
	b.mustSettled(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/sessions/main/exec", map[string]any{"command": "export FWD=through-b; cd /tmp"})
	c.mustSettled(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/sessions/main/exec", map[string]any{"command": "echo $FWD $(pwd)"}).json(t, &ex)
	if ex.Stdout != "through-b /tmp\n" {
		t.Fatalf("session exec through c: %q", ex.Stdout)
	}

	for _, size := range []int{100, 3 << 20} { // buffered, and streamed
		data := make([]byte, size)
		_, _ = rand.Read(data)
		path := "/v1/sandboxes/" + sb + "/files?path=blob-" + strconv.Itoa(size)
		b.mustSettled(http.StatusNoContent, "PUT", path, data)
		if got := c.mustSettled(http.StatusOK, "GET", path, nil).body; !bytes.Equal(got, data) {
			t.Fatalf("file of %d bytes: read back %d bytes, not the same", size, len(got))
		}
		if got := a.mustSettled(http.StatusOK, "GET", path, nil).body; !bytes.Equal(got, data) {
			t.Fatalf("file of %d bytes on the owner: not the same", size)
		}
	}

	b.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/events", map[string]any{"type": "agent.fwd", "data": map[string]any{"n": 1}})
	evs := c.readSSE("/v1/sandboxes/"+sb+"/events/stream", "", 20*time.Second, func(evs []sseEvent) bool {
		return strings.Contains(evs[len(evs)-1].data, "agent.fwd")
	})
	if len(evs) == 0 {
		t.Fatal("no events through c")
	}

	var p processJSON
	b.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes", map[string]any{"command": "seq 1 20000"}).json(t, &p)
	out := c.readSSE("/v1/sandboxes/"+sb+"/processes/"+p.ID+"/output", "", 30*time.Second, lastIs("exit"))
	if got, want := outputOf(t, out), seqLines(1, 20000); got != want {
		t.Fatalf("process output through c: %d bytes, want %d", len(got), len(want))
	}

	b.mustSettled(http.StatusCreated, "PUT", "/v1/sandboxes/"+sb+"/terminals/main", map[string]any{"cols": 100, "rows": 30})
	ws := c.dialWS("/v1/sandboxes/" + sb + "/terminals/main/ws")
	ws.readUntil(t, 20*time.Second, func(w *wsClient) bool { return w.control("ready") != nil })
	ws.send(t, websocket.MessageBinary, []byte("echo fwd-$((6*7))\r"))
	ws.readUntil(t, 20*time.Second, func(w *wsClient) bool { return strings.Contains(w.output.String(), "fwd-42") })

	if n := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardOK)); n < 8 {
		t.Fatalf("b counted %v forwards, want at least 8", n)
	}
	if n := testutil.ToFloat64(a.srv.fwd.metrics.forwards.WithLabelValues(forwardOK)); n != 0 {
		t.Fatalf("the owner forwarded %v requests, want none", n)
	}
	if m := string(b.mustSettled(http.StatusOK, "GET", "/metrics", nil).body); !strings.Contains(m, `sandgate_forward_requests_total{result="ok"}`) ||
		!strings.Contains(m, "sandgate_forward_held_requests 0") || !strings.Contains(m, "sandgate_forward_streams 0") ||
		!strings.Contains(m, "sandgate_forward_hold_duration_seconds_count") {
		t.Fatalf("/metrics lacks the forwarding metrics")
	}
}

// seqLines is what `seq from to` prints.
func seqLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// TestForwardCreateWithoutID: a create without an id through any node gets an id made
// there in the actor's format and goes to that id's owner, which the answer names.
func TestForwardCreateWithoutID(t *testing.T) {
	tr := newTrio(t, nil)
	b, c := tr.node("b"), tr.node("c")
	elsewhere := 0
	for i := 0; i < 8; i++ {
		var info sandboxJSON
		b.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"i": strconv.Itoa(i)}}).json(t, &info)
		owner, _, _ := b.srv.cluster.Owner(info.ID)
		if !strings.HasPrefix(info.ID, "sb_") || info.Node != string(owner) || info.Labels["i"] != strconv.Itoa(i) {
			t.Fatalf("created %+v; the table's owner is %s", info, owner)
		}
		if owner != "b" {
			elsewhere++
		}
		c.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+info.ID, nil)
	}
	// An empty body is {} too.
	var info sandboxJSON
	c.mustSettled(http.StatusCreated, "POST", "/v1/sandboxes", nil).json(t, &info)
	b.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+info.ID, nil)
	if elsewhere == 0 {
		t.Fatal("all 8 random ids were b's own: the forwarding path was not exercised")
	}
	// A bad body is refused where it arrives, as on one node.
	if r := b.do("POST", "/v1/sandboxes", `{"id": 7}`); r.status != http.StatusBadRequest {
		t.Fatalf("bad create: %d %s", r.status, r.body)
	}
}

// TestForwardHopLimit: a request that already made the hops (or one hop: a node that
// receives a forwarded request never forwards it) is not forwarded again: a node that
// does not own its sandbox answers 421 with its table index, and the owner serves it.
func TestForwardHopLimit(t *testing.T) {
	tr := newTrio(t, nil)
	a, b := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("hop", "a")
	a.sandbox(sb)
	before := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardOK))
	for _, hops := range []string{"1", "2", "9"} {
		t.Run("hops "+hops, func(t *testing.T) {
			// The rebalance goes on moving partitions (two commits each, by handoff),
			// so b's index may move during the request: its answer names one in between.
			from := b.srv.cluster.TableIndex()
			r := hopRequest(t, b, sb, hops, "")
			to := b.srv.cluster.TableIndex()
			idx, err := strconv.ParseUint(r.header.Get(indexHeader), 10, 64)
			if r.status != http.StatusMisdirectedRequest || err != nil || idx < from || idx > to {
				t.Fatalf("non-owner: %d index %q (b's table went from %d to %d): %s", r.status, r.header.Get(indexHeader), from, to, r.body)
			}
			if r := hopRequest(t, a, sb, hops, ""); r.status != http.StatusOK {
				t.Fatalf("owner: %d %s", r.status, r.body)
			}
		})
	}
	if after := testutil.ToFloat64(b.srv.fwd.metrics.forwards.WithLabelValues(forwardOK)); after != before {
		t.Fatalf("b forwarded %v requests that had made their hops", after-before)
	}
	if r := hopRequest(t, b, sb, "x", ""); r.status != http.StatusBadRequest {
		t.Fatalf("bad hops header: %d", r.status)
	}
}

// hopRequest sends GET /v1/sandboxes/{sb} to ts as a forwarding node would.
func hopRequest(t *testing.T, ts *testServer, sb, hops, epoch string) response {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.url+"/v1/sandboxes/"+sb, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(hopsHeader, hops)
	if epoch != "" {
		req.Header.Set(epochHeader, epoch)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// TestForwardWebSocketOrigin: the node that accepts a WebSocket checks its Origin: a
// page of its own address attaches through it to a sandbox owned by another node
// (whose own rule would refuse that page), and a page of another site is refused by
// the accepting node, as on one node.
func TestForwardWebSocketOrigin(t *testing.T) {
	tr := newTrio(t, nil)
	b := tr.node("b")
	sb := tr.ownedBy("origin", "a")
	b.sandbox(sb)
	b.must(http.StatusCreated, "PUT", "/v1/sandboxes/"+sb+"/terminals/t1", map[string]any{})
	tests := []struct {
		name, origin string
		ok           bool
	}{
		{"the accepting node's own page", b.url, true},
		{"another site", "http://evil.example", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.url, "http")+"/v1/sandboxes/"+sb+"/terminals/t1/ws",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}, "Origin": {tt.origin}}})
			if tt.ok {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c.CloseNow()
				return
			}
			if err == nil {
				c.CloseNow()
				t.Fatal("a page of another site attached")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("refused with %v", resp)
			}
		})
	}
}

// TestForwardOwnerCatchesUp: a forwarded request stamped with an epoch this owner's
// table has not reached waits (up to catchUpTimeout) for its replica to catch up: it
// is served once the table gets there, and is 421 if it does not in time.
func TestForwardOwnerCatchesUp(t *testing.T) {
	tr := newTrio(t, nil)
	a := tr.node("a")
	sb := tr.ownedBy("catch", "a")
	a.sandbox(sb)

	began := time.Now()
	r := hopRequest(t, a, sb, "1", strconv.FormatUint(a.srv.cluster.TableIndex()+1<<30, 10)) // never reached
	if took := time.Since(began); r.status != http.StatusMisdirectedRequest || took < catchUpTimeout {
		t.Fatalf("epoch ahead, table still: %d after %v: %s", r.status, took, r.body)
	}

	ahead := strconv.FormatUint(a.srv.cluster.TableIndex()+1, 10)
	type result struct {
		r    response
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", a.url+"/v1/sandboxes/"+sb, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(hopsHeader, "1")
		req.Header.Set(epochHeader, ahead)
		began := time.Now()
		resp, err := a.client.Do(req)
		if err != nil {
			done <- result{r: response{body: []byte(err.Error())}}
			return
		}
		resp.Body.Close()
		done <- result{r: response{status: resp.StatusCode}, took: time.Since(began)}
	}()
	tr.pin(tr.ownedBy("catch-other", "c"), "c") // one more entry (the rebalance may make one first)
	res := <-done
	switch {
	case res.r.status == http.StatusOK:
	case res.r.status == http.StatusMisdirectedRequest && res.took >= catchUpTimeout:
		t.Logf("the pin took longer than the catch-up wait (%v): 421, as it should", res.took)
	default:
		t.Fatalf("epoch ahead, table caught up: %d after %v %s", res.r.status, res.took, res.r.body)
	}
}
