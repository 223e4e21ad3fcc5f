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

// TestOriginRule: the Origin rule of checkHandshake, for each kind of listen address.
// The Host header is no input at all: a page's own name is allowed only when it is the
// server's.
func TestOriginRule(t *testing.T) {
	t.Parallel()
	patterns := cleanPatterns([]string{" App.Example.com ", "*.dev.example.com", "https://secure.example.com", ""})
	tests := []struct {
		name, listen, origin string
		want                 bool
	}{
		{"own loopback address", "127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"own address over https", "127.0.0.1:7070", "https://127.0.0.1:7070", true},
		{"loopback alias localhost", "127.0.0.1:7070", "http://localhost:7070", true},
		{"loopback alias localhost upper case", "127.0.0.1:7070", "http://LOCALHOST:7070", true},
		{"loopback alias ::1", "127.0.0.1:7070", "http://[::1]:7070", true},
		{"loopback alias from localhost", "localhost:7070", "http://127.0.0.1:7070", true},
		{"loopback alias from ::1", "[::1]:7070", "http://localhost:7070", true},
		{"loopback other port", "127.0.0.1:7070", "http://localhost:7071", false},
		{"loopback default port", "127.0.0.1:7070", "http://localhost", false},
		{"loopback listen on 80", "127.0.0.1:80", "http://localhost", true},
		{"rebinding name", "127.0.0.1:7070", "http://evil.example:7070", false},
		{"other loopback ip", "127.0.0.1:7070", "http://127.0.0.2:7070", false},
		{"public own address", "192.0.2.10:7070", "http://192.0.2.10:7070", true},
		{"public no loopback aliases", "192.0.2.10:7070", "http://localhost:7070", false},
		{"public name", "gw.example.com:443", "https://GW.example.com", true},
		{"all interfaces v4", "0.0.0.0:7070", "http://127.0.0.1:7070", false},
		{"all interfaces v6", "[::]:7070", "http://localhost:7070", false},
		{"all interfaces port only", ":7070", "http://localhost:7070", false},
		{"all interfaces pattern", "0.0.0.0:7070", "https://app.example.com", true},
		{"pattern wildcard", ":7070", "http://a.dev.example.com", true},
		{"pattern wildcard no match", ":7070", "http://dev.example.com", false},
		{"pattern with scheme", ":7070", "https://secure.example.com", true},
		{"pattern with scheme, other scheme", ":7070", "http://secure.example.com", false},
		{"null origin", "127.0.0.1:7070", "null", false},
		{"garbage", "127.0.0.1:7070", "::::", false},
		{"userinfo", "127.0.0.1:7070", "http://x@127.0.0.1:7070", false},
		{"file scheme", "127.0.0.1:7070", "file://127.0.0.1:7070", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := newOriginRule(tt.listen, patterns).allows(tt.origin); got != tt.want {
				t.Fatalf("listen %s, origin %s: allowed %v, want %v", tt.listen, tt.origin, got, tt.want)
			}
		})
	}
}

// TestWebSocketOriginHandshake: real handshakes against a server on a port of 0 (the
// rule uses the port actually bound). A page whose Origin equals the Host header it
// sends, as a DNS-rebinding page's does, is refused; the loopback aliases and an
// allowed pattern attach; a client without Origin attaches by its token.
func TestWebSocketOriginHandshake(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.Listen = "127.0.0.1:0" // the listener's real port must be used, not this
		c.AllowedOrigins = []string{"*.trusted.example"}
	}})
	ts.sandbox("og")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/og/terminals/t1", map[string]any{})
	port := strings.TrimPrefix(ts.url, "http://127.0.0.1:")
	tests := []struct {
		name, host, origin string
		ok                 bool
	}{
		{"no origin", "", "", true},
		{"own address", "", "http://127.0.0.1:" + port, true},
		{"localhost alias", "", "http://localhost:" + port, true},
		{"allowed pattern", "", "https://app.trusted.example", true},
		{"rebinding: origin equals host", "evil.example:" + port, "http://evil.example:" + port, false},
		{"other port", "", "http://localhost:1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h := http.Header{"Authorization": {"Bearer " + testToken}}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+"/v1/sandboxes/og/terminals/t1/ws", &websocket.DialOptions{HTTPHeader: h, Host: tt.host})
			if tt.ok {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c.CloseNow()
				return
			}
			if err == nil {
				c.CloseNow()
				t.Fatal("handshake accepted")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial: %v, response %v; want 403", err, resp)
			}
			body, _ := io.ReadAll(resp.Body)
			if r := (response{status: resp.StatusCode, body: body}); r.errorCode(t) != codeForbidden {
				t.Fatalf("body %s", body)
			}
		})
	}
}
