package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// frame is one frame a test client sends.
type frame struct {
	typ  websocket.MessageType
	data string
}

// TestWSInputModes: under each ?input= mode the frames that are input reach the
// terminal's shell (the shell computes $((6*7)), so its answer is not an echo), and the
// controls in the other frame type resize the PTY. The ready message names a mode that
// is not the default.
func TestWSInputModes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("wi")
	resize := `{"type":"resize","cols":111,"rows":33}`
	tests := []struct {
		name, mode string
		frames     []frame
	}{
		{"binary", "", []frame{{websocket.MessageText, resize}, {websocket.MessageBinary, "stty size; echo m-$((6*7))\r"}}},
		{"text", "text", []frame{{websocket.MessageBinary, resize}, {websocket.MessageText, "stty size; echo m-$((6*7))\r"}}},
		{"line", "line", []frame{{websocket.MessageBinary, resize}, {websocket.MessageText, "stty size; echo m-$((6*7))"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			term := "t-" + tt.name
			ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/wi/terminals/"+term, map[string]any{})
			path := "/v1/sandboxes/wi/terminals/" + term + "/ws"
			if tt.mode != "" {
				path += "?input=" + tt.mode
			}
			c := ts.dialWS(path)
			c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
			if got, _ := c.control("ready")["input"].(string); got != tt.mode {
				t.Fatalf("ready says input %q, want %q", got, tt.mode)
			}
			for _, f := range tt.frames {
				c.send(t, f.typ, []byte(f.data))
			}
			c.readUntil(t, 30*time.Second, func(c *wsClient) bool {
				return strings.Contains(c.output.String(), "m-42") && strings.Contains(c.output.String(), "33 111")
			})
			if e := c.control("error"); e != nil {
				t.Fatalf("error message: %v", e)
			}
		})
	}
}

// TestWSInputErrors: a frame the server cannot use is answered with an error message
// that says why (and, for a frame that is not a control, what the frames of the mode
// mean), and the connection goes on; a bad ?input= is 400 before the upgrade.
func TestWSInputErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("we")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/we/terminals/t1", map[string]any{})
	var p struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/we/processes", map[string]any{"command": "cat"}).json(t, &p)
	tests := []struct {
		name, path string
		frame      frame
		want       string
	}{
		{"text that is not JSON", "/terminals/t1/ws", frame{websocket.MessageText, "echo hi"}, "?input=line"},
		{"unknown control", "/terminals/t1/ws", frame{websocket.MessageText, `{"type":"paste","text":"x"}`}, `unknown control type "paste"`},
		{"size out of range", "/terminals/t1/ws", frame{websocket.MessageText, `{"type":"resize","cols":0,"rows":9}`}, "cols and rows from 1 to"},
		{"unknown signal", "/terminals/t1/ws", frame{websocket.MessageText, `{"type":"signal","signal":"SIGNOPE"}`}, "SIGNOPE"},
		{"binary that is not JSON in text mode", "/terminals/t1/ws?input=text", frame{websocket.MessageBinary, "\x03"}, "with ?input=text text frames are input"},
		{"binary that is not JSON in line mode", "/terminals/t1/ws?input=line", frame{websocket.MessageBinary, "ls"}, "with ?input=line text frames are input"},
		{"resize of a process without a PTY", "/processes/" + p.ID + "/ws", frame{websocket.MessageText, `{"type":"resize","cols":80,"rows":24}`}, "pty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ts.dialWS("/v1/sandboxes/we" + tt.path)
			c.send(t, tt.frame.typ, []byte(tt.frame.data))
			c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("error") != nil })
			e := c.control("error")
			if msg, _ := e["message"].(string); e["code"] == nil || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %v, want a message with %q", e, tt.want)
			}
			if c.controls[0]["type"] != "ready" {
				t.Fatalf("first message %v, want ready", c.controls[0])
			}
			// The connection goes on: a good control still works after the bad one.
			c.send(t, tt.frame.typ, []byte(`{"type":"signal","signal":"SIGWINCH"}`))
			c.send(t, tt.frame.typ, []byte(`{"type":"nope"}`))
			c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return len(c.controls) >= 3 })
			if c.controls[2]["type"] != "error" || !strings.Contains(c.controls[2]["message"].(string), "nope") {
				t.Fatalf("after a good control: %v", c.controls[2:])
			}
		})
	}
	for _, q := range []string{"?input=TEXT", "?input=raw"} {
		if r := ts.do("GET", "/v1/sandboxes/we/terminals/t1/ws"+q, nil); r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Fatalf("GET ws%s: %d %s", q, r.status, r.body)
		}
	}
}
