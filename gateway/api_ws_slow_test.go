package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketStalledClients attaches three clients to a process that writes as fast
// as it can. One reads throughout and must keep getting output. Two read nothing: the
// server gives up on both after the write timeout; the one that then reads again gets
// what was buffered and a close with 1013, the other is dropped. Resuming at its
// offset, the closed client is told exactly where it stands.
func TestWebSocketStalledClients(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{wsWriteTimeout: time.Second})
	ts.sandbox("slow")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/slow/processes",
		map[string]any{"command": "yes sandgate-stalled-client"}).json(t, &p)
	path := "/v1/sandboxes/slow/processes/" + p.ID + "/ws"
	late, dead, active := ts.dialWS(path), ts.dialWS(path), ts.dialWS(path)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var activeBytes atomic.Int64
	activeDone := make(chan error, 1)
	go func() {
		for {
			typ, data, err := active.conn.Read(ctx)
			if err != nil {
				activeDone <- err
				return
			}
			if typ == websocket.MessageBinary {
				activeBytes.Add(int64(len(data)))
			}
		}
	}()
	watch := ts.srv.wsWatch
	count := func() (writers, stalled int) {
		watch.mu.Lock()
		defer watch.mu.Unlock()
		for ww := range watch.writers {
			if ww.stalled.Load() {
				stalled++
			}
		}
		return len(watch.writers), stalled
	}
	eventually(t, 30*time.Second, "two clients given up on", func() bool { _, s := count(); return s == 2 })

	// The late reader gets what its buffers held, then 1013.
	offset, status := drain(ctx, t, late)
	if status != websocket.StatusTryAgainLater {
		t.Fatalf("late reader closed with %v, want 1013", status)
	}
	// The one that never reads is dropped; the active one was never held up.
	eventually(t, 30*time.Second, "the dead client dropped", func() bool { w, _ := count(); return w == 1 })
	// Neither keeps the sandbox awake any more: only the active client is attached.
	eventually(t, 30*time.Second, "one client attached", func() bool {
		n, err := ts.srv.node.Attached(ctx, "slow")
		return err == nil && n == 1
	})
	if n := activeBytes.Load(); n < 1<<20 {
		t.Fatalf("the active client got only %d bytes", n)
	}
	cancel()
	<-activeDone
	dead.conn.CloseNow()

	again := ts.dialWS(path + "?offset=" + strconv.FormatInt(offset, 10))
	again.readUntil(t, 30*time.Second, func(c *wsClient) bool {
		return c.output.Len() > 0 || c.control("gap") != nil
	})
	if gap := again.control("gap"); gap != nil {
		if int64(gap["from"].(float64)) != offset {
			t.Fatalf("gap %v, want it from %d", gap, offset)
		}
	} else if ready := again.control("ready"); int64(ready["offset"].(float64)) != offset {
		t.Fatalf("ready %v, want offset %d", ready, offset)
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/slow/processes/"+p.ID, nil)
}

// drain reads c to its end and returns the offset of the next byte it would have got
// and the close status.
func drain(ctx context.Context, t *testing.T, c *wsClient) (int64, websocket.StatusCode) {
	t.Helper()
	var offset int64
	for {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("not closed: %v", err)
			}
			return offset, websocket.CloseStatus(err)
		}
		if typ == websocket.MessageBinary {
			offset += int64(len(data))
			continue
		}
		var m wsControl
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("bad control %q", data)
		}
		switch m.Type {
		case "ready":
			offset = *m.Offset
		case "gap":
			offset = *m.To
		}
	}
}

// TestWebSocketIdleClientHasNoSender checks that a client with nothing to receive has no
// output goroutine, and that output still arrives: it starts one.
func TestWebSocketIdleClientHasNoSender(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("idle")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/idle/processes",
		map[string]any{"command": "cat", "pty": map[string]int{"cols": 80, "rows": 24}}).json(t, &p)
	c := ts.dialWS("/v1/sandboxes/idle/processes/" + p.ID + "/ws")
	c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	for i, word := range []string{"first", "second"} {
		eventually(t, 10*time.Second, "no sender for an idle client", func() bool { return ts.srv.wsPumps.Load() == 0 })
		c.send(t, websocket.MessageBinary, []byte(word+"\r"))
		c.readUntil(t, 10*time.Second, func(c *wsClient) bool {
			return strings.Count(c.output.String(), word) >= 2 // the echo and cat's copy
		})
		if i == 0 && ts.srv.wsPumps.Load() > 1 {
			t.Fatalf("%d senders for one client", ts.srv.wsPumps.Load())
		}
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/idle/processes/"+p.ID, nil)
}

// TestWebSocketShutdown: a server shutting down tells an attached idle client why
// (close 1012, service restart), and a client that reads nothing while output is
// pending does not hold the shutdown up.
func TestWebSocketShutdown(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("bye")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/bye/terminals/t1", map[string]any{})
	idle := ts.dialWS("/v1/sandboxes/bye/terminals/t1/ws")
	idle.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/bye/processes",
		map[string]any{"command": "yes sandgate-shutdown"}).json(t, &p)
	ts.dialWS("/v1/sandboxes/bye/processes/" + p.ID + "/ws") // reads nothing

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- ts.srv.Shutdown(ctx)
	}()
	if st := idle.readUntil(t, 30*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusServiceRestart {
		t.Fatalf("idle client closed with %v, want %v", st, websocket.StatusServiceRestart)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	t.Logf("shutdown took %v", time.Since(start))
}
