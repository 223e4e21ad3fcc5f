package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWSAloneLeaseLapseKeepsStreams: the lease of a node alone in its cluster lapses
// (its renewal, a raft commit, is held up as a loaded disk's fsync would hold it),
// and its WebSocket stays open and served: nobody can take the sandbox over, so its
// stream is not ended with 1012 (the sweep that ends the streams of a node that
// lost its lease stops none), and it goes on once the lease is renewed.
func TestWSAloneLeaseLapseKeepsStreams(t *testing.T) {
	t.Parallel()
	hold := &replicaHold{}
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.LeaseTTL = time.Second
		c.beforeBatches = hold.wait
	}})
	t.Cleanup(hold.open) // before the server's shutdown, should the test fail held
	ts.sandbox("lone")
	var p struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/lone/processes", map[string]any{"command": "cat"}).json(t, &p)
	c := ts.dialWS("/v1/sandboxes/lone/processes/" + p.ID + "/ws")
	c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })

	// A write held before the FSM applies it holds every entry after it, the
	// lease renewals among them.
	hold.shut()
	created := make(chan response, 1)
	go func() { created <- ts.do("POST", "/v1/sandboxes", map[string]any{"id": "held"}) }()
	eventually(t, 30*time.Second, "the node's lease to lapse", func() bool { ok, _ := ts.srv.cluster.Lease(); return !ok })

	if n := ts.srv.streams.sweep(ts.srv.streamAdmit); n != 0 || ts.srv.streams.count("lone") != 1 {
		t.Fatalf("the sweep after the lapse stopped %d streams, %d left; want none stopped", n, ts.srv.streams.count("lone"))
	}
	// The watcher swept too when the lease ran out: the connection still answers.
	c.send(t, websocket.MessageText, []byte(`{"type":"nope"}`))
	if st := c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("error") != nil }); st != -1 {
		t.Fatalf("closed with %v during the lapse", st)
	}

	hold.open()
	select { // only a way to hold the log: any answer will do
	case r := <-created:
		t.Logf("the held create: %d", r.status)
	case <-time.After(30 * time.Second):
		t.Fatal("the held create did not finish")
	}
	eventually(t, 30*time.Second, "the lease renewed", func() bool { ok, _ := ts.srv.cluster.Lease(); return ok })
	c.send(t, websocket.MessageBinary, []byte("after-the-lapse\n"))
	if st := c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "after-the-lapse") }); st != -1 {
		t.Fatalf("closed with %v after the lapse", st)
	}
}
