package sdk

// A test peer: the streaming endpoints of the contract, served on 127.0.0.1 with
// scripted connection drops, so reconnect and resume logic is tested against a real
// HTTP server.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// chunk is one write of process output.
type chunk struct {
	stream string
	data   string
}

// outputPeer serves GET …/processes/p/output.
type outputPeer struct {
	chunks  []chunk
	dropped int64 // bytes that left the ring buffer
	// perConn[i] is how many chunks connection i sends before it ends without an
	// exit event; connections past the list send everything and the exit event.
	perConn []int
	status  int // when non-zero, every request is answered with this error status

	mu   sync.Mutex
	reqs []http.Header // Last-Event-ID and X-Offset (the query offset) of each request
}

func (p *outputPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	n := len(p.reqs)
	p.reqs = append(p.reqs, http.Header{"Last-Event-Id": r.Header["Last-Event-Id"], "X-Offset": {r.URL.Query().Get("offset")}})
	p.mu.Unlock()
	if p.status != 0 {
		w.Header().Set("Retry-After", "0")
		writeAPIError(w, p.status, statusCode(p.status), "scripted failure")
		return
	}
	off, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	fmt.Fprint(w, ": hello\n\n")
	if off < p.dropped {
		fmt.Fprintf(w, "event: gap\ndata: {\"from\": %d, \"to\": %d}\n\n", off, p.dropped)
		off = p.dropped
	}
	limit := len(p.chunks)
	if n < len(p.perConn) {
		limit = p.perConn[n]
	}
	var start int64
	sent := 0
	for _, c := range p.chunks {
		end := start + int64(len(c.data))
		if end > off && start >= p.dropped && sent < limit {
			// Send whole chunks, so a resume from mid-chunk overlaps what was sent.
			b, _ := json.Marshal(map[string]any{"stream": c.stream, "offset": start, "data": []byte(c.data)})
			fmt.Fprintf(w, "event: output\r\nid: %d\r\ndata: %s\r\n\r\n", end, b)
			fl.Flush()
			sent++
		}
		start = end
	}
	if n < len(p.perConn) {
		return // a dropped connection: the body ends without an exit event
	}
	fmt.Fprint(w, "event: exit\ndata: {\"exit_code\": 3, \"signal\": null}\n\n")
}

func (p *outputPeer) requests() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.reqs...)
}

func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error": {"code": %q, "message": %q}}`, code, msg)
}

// newTestClient serves h on 127.0.0.1 and returns a client for it with fast retries.
func newTestClient(tb testing.TB, h http.Handler, retries int) *Client {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return New(srv.URL, "tok", &Options{HTTPClient: srv.Client(), MaxRetries: retries, RetryBackoff: time.Millisecond})
}
