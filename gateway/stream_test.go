package gateway

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name, id, data string
}

// readSSE opens an SSE stream and collects events until stop returns true or the
// bound passes. lastEventID, when set, is sent as Last-Event-ID.
func (ts *testServer) readSSE(path, lastEventID string, bound time.Duration, stop func([]sseEvent) bool) []sseEvent {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		ts.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				events = append(events, cur)
				if stop(events) {
					return events
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			cur.id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			if cur.data != "" {
				cur.data += "\n"
			}
			cur.data += line[len("data: "):]
		}
	}
	if ctx.Err() != nil {
		ts.t.Fatalf("GET %s: stream did not finish within %v (got %d events)", path, bound, len(events))
	}
	return events
}

// outputOf concatenates the bytes of SSE output events.
func outputOf(t testing.TB, events []sseEvent) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e.name != "output" {
			continue
		}
		var o outputEventJSON
		if err := json.Unmarshal([]byte(e.data), &o); err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(o.Data)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
	}
	return b.String()
}

func lastIs(name string) func([]sseEvent) bool {
	return func(evs []sseEvent) bool { return evs[len(evs)-1].name == name }
}

// wsClient is a test WebSocket client that collects output and control messages.
type wsClient struct {
	conn     *websocket.Conn
	output   strings.Builder
	controls []map[string]any
}

func (ts *testServer) dialWS(path string) *wsClient {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		ts.t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	conn.SetReadLimit(64 << 20)
	ts.t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{conn: conn}
}

// readUntil reads frames until cond holds or the bound passes; it returns the close
// status if the server closed the connection.
func (c *wsClient) readUntil(t testing.TB, bound time.Duration, cond func(*wsClient) bool) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for !cond(c) {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				return st
			}
			t.Fatalf("read: %v (output so far %q)", err, c.output.String())
		}
		if typ == websocket.MessageBinary {
			c.output.Write(data)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("bad control frame %q", data)
		}
		c.controls = append(c.controls, m)
	}
	return -1
}

func (c *wsClient) control(typ string) map[string]any {
	for _, m := range c.controls {
		if m["type"] == typ {
			return m
		}
	}
	return nil
}

func (c *wsClient) send(t testing.TB, typ websocket.MessageType, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, typ, data); err != nil {
		t.Fatalf("write: %v", err)
	}
}
