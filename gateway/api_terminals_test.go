package gateway

import (
	"context"
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
	if term.Cols != 100 || term.Rows != 30 || term.Status != "running" || term.Process == nil || !strings.HasPrefix(*term.Process, "proc_") {
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

// TestTerminalWithoutShell: once its shell is ended (here by deactivation, which ends
// work as hibernation and a restart do), a terminal is listed with "process": null and
// a documented status, at the size a WebSocket client last set; a GET starts a new
// shell at that size.
func TestTerminalWithoutShell(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("t2")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/t2/terminals/main", map[string]any{"cols": 100, "rows": 30})
	c := ts.dialWS("/v1/sandboxes/t2/terminals/main/ws")
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	c.send(t, websocket.MessageText, []byte(`{"type":"resize","cols":120,"rows":40}`))
	c.send(t, websocket.MessageBinary, []byte("stty size\r"))
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "40 120") })
	c.conn.Close(websocket.StatusNormalClosure, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.node.Deactivate(ctx, "t2"); err != nil {
		t.Fatal(err)
	}

	var list struct{ Terminals []map[string]any }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t2/terminals", nil).json(t, &list)
	if len(list.Terminals) != 1 {
		t.Fatalf("terminals %+v", list)
	}
	got := list.Terminals[0]
	if p, ok := got["process"]; !ok || p != nil || got["status"] != "exited" || got["cols"] != 120.0 || got["rows"] != 40.0 {
		t.Fatalf("listed terminal %v, want process null, status exited, 120x40", got)
	}
	var term terminalJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t2/terminals/main", nil).json(t, &term)
	if term.Process == nil || !strings.HasPrefix(*term.Process, "proc_") || term.Status != "running" || term.Cols != 120 || term.Rows != 40 {
		t.Fatalf("terminal after GET %+v", term)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/t2/terminals", nil).json(t, &list)
	if got := list.Terminals[0]; got["process"] != *term.Process || got["status"] != "running" {
		t.Fatalf("listed after GET %v", got)
	}
}
