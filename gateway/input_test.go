package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
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

// TestShutdownWithStuckInput: a shutdown is not held up by input stuck on a process
// that does not read it, from a POST or a WebSocket client, even with no input
// timeout to speak of: Shutdown returns, the stuck requests are answered or closed,
// and the process tree is ended.
func TestShutdownWithStuckInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{inputTimeout: time.Hour, shutdownGrace: time.Second})
	ts.sandbox("stuckbye")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/stuckbye/processes", map[string]any{
		"command": "exec sleep 1000", "pty": map[string]int{"cols": 80, "rows": 24},
	}).json(t, &p)
	path := "/v1/sandboxes/stuckbye/processes/" + p.ID
	text := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef012345678901234\n", 12<<10) // 768 KiB

	writer := ts.dialWS(path + "/ws")
	writer.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	wsDone := make(chan websocket.StatusCode, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := 0; i < len(text); i += 64 << 10 {
			if writer.conn.Write(ctx, websocket.MessageBinary, []byte(text[i:i+64<<10])) != nil {
				break
			}
		}
		for {
			if _, _, err := writer.conn.Read(ctx); err != nil {
				wsDone <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	posted, sent := make(chan int, 1), make(chan struct{})
	go func() {
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) },
		})
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		body, _ := json.Marshal(map[string]string{"text": text})
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+path+"/input", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := ts.client.Do(req)
		if err != nil {
			posted <- 0
			return
		}
		resp.Body.Close()
		posted <- resp.StatusCode
	}()
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the input was not sent")
	}

	host := ts.hostPID("stuckbye", p.PID)
	if host <= 0 {
		t.Fatalf("no host process for pid %d of the sandbox", p.PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := <-posted; st != http.StatusServiceUnavailable && st != 0 {
		t.Fatalf("stuck input answered %d, want 503 (or the connection closed)", st)
	}
	if st := <-wsDone; st != websocket.StatusServiceRestart && st != -1 {
		t.Fatalf("client with stuck input closed with %v", st)
	}
	if err := syscall.Kill(host, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d (host pid %d) still there after Shutdown: %v", p.PID, host, err)
	}
}
