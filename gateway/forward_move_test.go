package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestForwardStreamsEndWhenSandboxMoves: a WebSocket and an SSE stream of a sandbox
// owned by a, attached through c, end when the sandbox is moved to b (the WebSocket
// with 1012), and the move ends a's process; a client whose connection through c
// drops resumes through b from the offset it reached, with the output whole:
// nothing lost, nothing repeated.
func TestForwardStreamsEndWhenSandboxMoves(t *testing.T) {
	tr := newTrio(t, nil)
	a, b, c := tr.node("a"), tr.node("b"), tr.node("c")
	sb := tr.ownedBy("mv", "a")
	c.sandbox(sb)
	var p processJSON
	c.must(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes",
		map[string]any{"command": "seq 1 1000; read x; seq 1001 2000"}).json(t, &p)

	ws := c.dialWS("/v1/sandboxes/" + sb + "/processes/" + p.ID + "/ws")
	first := seqLines(1, 1000)
	ws.readUntil(t, 30*time.Second, func(w *wsClient) bool { return w.output.Len() >= len(first) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/sandboxes/"+sb+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	sse, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	if sse.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %d", sse.StatusCode)
	}
	eventually(t, 30*time.Second, "both streams registered on a", func() bool { return a.srv.streams.count(sb) == 2 })

	tr.pin(sb, "b")
	if st := ws.readUntil(t, 30*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusServiceRestart {
		t.Fatalf("websocket closed with %v, want 1012", st)
	}
	if _, err := io.Copy(io.Discard, sse.Body); err != nil {
		t.Fatalf("event stream did not end cleanly: %v", err)
	}
	if got := ws.output.String(); got != first {
		t.Fatalf("before the move: %d bytes, want %d", len(got), len(first))
	}

	// A move ends the old activation: processes are node-local, so the one started
	// on a is gone when the sandbox comes back, recorded as exited.
	tr.pin(sb, "a")
	eventually(t, 30*time.Second, "the moved process recorded as exited", func() bool {
		r := b.do("GET", "/v1/sandboxes/"+sb+"/processes/"+p.ID, nil)
		var got processJSON
		return r.status == http.StatusOK && json.Unmarshal(r.body, &got) == nil && got.Status == "exited"
	})

	// A client whose connection through one node drops resumes through another from
	// the offset it reached, with nothing lost or repeated.
	var q processJSON
	c.must(http.StatusCreated, "POST", "/v1/sandboxes/"+sb+"/processes",
		map[string]any{"command": "seq 1 1000; read x; seq 1001 2000"}).json(t, &q)
	drop := c.dialWS("/v1/sandboxes/" + sb + "/processes/" + q.ID + "/ws")
	drop.readUntil(t, 30*time.Second, func(w *wsClient) bool { return w.output.Len() >= len(first) })
	drop.conn.CloseNow()
	b.must(http.StatusNoContent, "POST", "/v1/sandboxes/"+sb+"/processes/"+q.ID+"/input", map[string]any{"text": "go\n"})
	again := b.dialWS("/v1/sandboxes/" + sb + "/processes/" + q.ID + "/ws?offset=" + strconv.Itoa(drop.output.Len()))
	if st := again.readUntil(t, 30*time.Second, func(*wsClient) bool { return false }); st != websocket.StatusNormalClosure {
		t.Fatalf("resumed websocket closed with %v", st)
	}
	if got, want := drop.output.String()+again.output.String(), seqLines(1, 2000); got != want {
		t.Fatalf("output across the reconnect: %d bytes, want %d", len(got), len(want))
	}
	if r, ok := again.control("ready")["offset"].(float64); !ok || int(r) != drop.output.Len() {
		t.Fatalf("resumed at %v, want %d", again.control("ready"), drop.output.Len())
	}
}
