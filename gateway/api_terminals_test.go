package gateway

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestTerminals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("t1")
	// Many concurrent PUTs make exactly one terminal (one PTY process).
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := ts.send(testToken, "PUT", "/v1/sandboxes/t1/terminals/main", map[string]any{"cols": 100, "rows": 30})
			statuses[i] = r.status
		}()
	}
	wg.Wait()
	created := 0
	for _, st := range statuses {
		switch st {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("PUT status %d", st)
		}
	}
	if created != 1 {
		t.Fatalf("%d PUTs answered 201, want exactly 1", created)
	}
	var term terminalJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t1/terminals/main", nil).json(t, &term)
	if term.Cols != 100 || term.Rows != 30 || term.Status != "running" || !strings.HasPrefix(term.Process, "proc_") {
		t.Fatalf("terminal %+v", term)
	}
	var procs struct{ Processes []processJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t1/processes?tag=terminal:main", nil).json(t, &procs)
	if len(procs.Processes) != 1 || !procs.Processes[0].PTY {
		t.Fatalf("terminal processes: %+v", procs)
	}

	c := ts.dialWS("/v1/sandboxes/t1/terminals/main/ws")
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	c.send(t, websocket.MessageBinary, []byte("echo hello-$((6*7)); stty size\r"))
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "hello-42") })
	ts.must(http.StatusNoContent, "POST", "/v1/sandboxes/t1/terminals/main/resize", map[string]any{"cols": 132, "rows": 43})
	c.send(t, websocket.MessageBinary, []byte("stty size\r"))
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "43 132") })

	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/t1/terminals/main", nil)
	if st := c.readUntil(t, 10*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusNormalClosure || c.control("exit") == nil {
		t.Fatalf("after delete: close %v exit %v", st, c.control("exit"))
	}
	if r := ts.do("GET", "/v1/sandboxes/t1/terminals/main/ws", nil); r.status != http.StatusNotFound {
		t.Fatalf("ws to a deleted terminal: %d", r.status)
	}
	var list struct{ Terminals []terminalJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t1/terminals", nil).json(t, &list)
	if len(list.Terminals) != 0 {
		t.Fatalf("terminals after delete: %+v", list)
	}
}
