package gateway

import (
	"net/http"
	"strconv"
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
		{"unknown signal", "/terminals/t1/ws", frame{websocket.MessageText, `{"type":"signal","signal":"SIGNOPE"}`}, `unknown signal "SIGNOPE"`},
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

// TestWSInputErrorsUnderOutput hammers the error messages' path while output streams:
// bad controls sent as fast as possible, while the process writes, all reach the
// client in order after ready and before the exit (at least the 16 that may wait), and
// the stream still ends with the exit and every output byte.
func TestWSInputErrorsUnderOutput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("wh")
	var p struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/wh/processes", map[string]any{
		"command": "seq 1 50000; read x; echo done-$x", "pty": map[string]any{"cols": 80, "rows": 24}}).json(t, &p)
	c := ts.dialWS("/v1/sandboxes/wh/processes/" + p.ID + "/ws?offset=0")
	const bad = 40
	for i := range bad {
		c.send(t, websocket.MessageText, []byte(`{"type":"bad`+strconv.Itoa(i)+`"}`))
	}
	c.send(t, websocket.MessageBinary, []byte("ok\r"))
	if st := c.readUntil(t, 60*time.Second, func(c *wsClient) bool { return c.control("exit") != nil }); st != -1 {
		t.Fatalf("closed with %v before the exit", st)
	}
	if c.controls[0]["type"] != "ready" || c.controls[len(c.controls)-1]["type"] != "exit" {
		t.Fatalf("first %v, last %v: want ready first and exit last", c.controls[0], c.controls[len(c.controls)-1])
	}
	next := 0
	for _, m := range c.controls[1 : len(c.controls)-1] {
		if m["type"] != "error" {
			t.Fatalf("unexpected message %v", m)
		}
		msg, _ := m["message"].(string)
		for next < bad && !strings.Contains(msg, `"bad`+strconv.Itoa(next)+`"`) {
			next++ // dropped while 16 waited
		}
		if next == bad {
			t.Fatalf("error %q is out of order", msg)
		}
		next++
	}
	if n := len(c.controls) - 2; n < maxNotices {
		t.Fatalf("%d error messages, want at least %d", n, maxNotices)
	}
	out := c.output.String()
	if !strings.Contains(out, "50000\r\n") || !strings.Contains(out, "done-ok") {
		t.Fatalf("output lacks the end of seq or the answer: ...%q", out[max(0, len(out)-200):])
	}
}
