package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketHandshakeErrors: a refused handshake is answered in the contract's error
// shape, like every other error, not in plain text.
func TestWebSocketHandshakeErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("hs")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/hs/terminals/t1", map[string]any{})
	upgrade := map[string]string{
		"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
	}
	with := func(changes map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range upgrade {
			h[k] = v
		}
		for k, v := range changes {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name    string
		headers map[string]string
		status  int
		code    string
	}{
		{"no upgrade", nil, http.StatusUpgradeRequired, codeInvalidArgument},
		{"bad version", with(map[string]string{"Sec-WebSocket-Version": "8"}), http.StatusBadRequest, codeInvalidArgument},
		{"bad key", with(map[string]string{"Sec-WebSocket-Key": "short"}), http.StatusBadRequest, codeInvalidArgument},
		{"foreign origin", with(map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden, codeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.url+"/v1/sandboxes/hs/terminals/t1/ws", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			r := response{status: resp.StatusCode, header: resp.Header, body: body}
			if r.status != tt.status || r.header.Get("Content-Type") != "application/json" || r.errorCode(t) != tt.code {
				t.Fatalf("status %d, %s: %s; want %d %s", r.status, r.header.Get("Content-Type"), body, tt.status, tt.code)
			}
		})
	}
	// The page's own origin, and the origins allowed by configuration, may attach.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+"/v1/sandboxes/hs/terminals/t1/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}, "Origin": {ts.url}},
	})
	if err != nil {
		t.Fatalf("same-origin attach: %v", err)
	}
	c.CloseNow()
}

// TestWebSocketOffsetPastEnd: an offset past the output's end starts the stream at the
// end, and ready says so, so the client counts the bytes that follow right.
func TestWebSocketOffsetPastEnd(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("pe")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/pe/processes", map[string]any{"command": "printf abc; exec cat"}).json(t, &p)
	path := "/v1/sandboxes/pe/processes/" + p.ID + "/ws"
	first := ts.dialWS(path)
	first.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.output.String() == "abc" })
	late := ts.dialWS(path + "?offset=99999")
	late.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	if off := late.control("ready")["offset"]; off != float64(3) {
		t.Fatalf("ready offset %v, want 3 (the end)", off)
	}
	first.send(t, websocket.MessageBinary, []byte("d"))
	late.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.output.String() == "d" })
}
