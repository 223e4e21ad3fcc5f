package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestInputToProcessNotReading: input to a PTY process that does not read it (its
// input queue full) is answered 503 unavailable with Retry-After once the input
// timeout passes, instead of hanging; a WebSocket client whose input is stuck is
// closed with 1013; other clients still read the process and the process stays
// usable (GET, DELETE).
func TestInputToProcessNotReading(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{inputTimeout: 500 * time.Millisecond})
	ts.sandbox("stuck")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/stuck/processes", map[string]any{
		"command": "echo started; exec sleep 1000", "pty": map[string]int{"cols": 80, "rows": 24},
	}).json(t, &p)
	path := "/v1/sandboxes/stuck/processes/" + p.ID
	reader := ts.dialWS(path + "/ws?offset=0")
	reader.readUntil(t, 30*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "started") })

	text := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef012345678901234\n", 12<<10) // 768 KiB
	r := ts.do("POST", path+"/input", map[string]any{"text": text})
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"unavailable"`) || r.header.Get("Retry-After") == "" {
		t.Fatalf("input to a process not reading it: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}

	writer := ts.dialWS(path + "/ws")
	writer.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	writer.send(t, websocket.MessageBinary, []byte(text[:4096]))
	if st := writer.readUntil(t, 30*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusTryAgainLater {
		t.Fatalf("client with stuck input closed with %v, want 1013", st)
	}

	var got processJSON
	ts.must(http.StatusOK, "GET", path, nil).json(t, &got)
	if got.Status != "running" {
		t.Fatalf("status %q", got.Status)
	}
	// The reading client was never dropped: it still gets the exit.
	ts.must(http.StatusNoContent, "DELETE", path, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exited, err := readWSStream(ctx, reader.conn, &streamCheck{})
	if err != nil || !exited {
		t.Fatalf("reader: exit %v, %v", exited, err)
	}
}
