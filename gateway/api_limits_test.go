package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestBodyLimits: every route that takes a body answers a body over its limit with
// 413 too_large naming the limit: 1 MiB for JSON, 16 MiB for files. The route table is
// walked, so a route added later is covered too.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("lim")
	ids := strings.NewReplacer("{sb}", "lim", "{p}", "p1", "{s}", "s1", "{t}", "t1", "{id}", "m1", "{ptyID}", "p1")
	overJSON := `{"x":"` + strings.Repeat("a", maxJSONBody) + `"}`
	checked := 0
	for _, rt := range (&Server{}).routeTable() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if method != "POST" && method != "PUT" {
			continue
		}
		checked++
		body, limit := overJSON, maxJSONBody
		if rt.pattern == "PUT "+sbPath+"/files" {
			path += "?path=big"
			body, limit = strings.Repeat("x", maxFileBody+1), maxFileBody
		}
		t.Run(rt.pattern, func(t *testing.T) {
			// The admin token: cluster membership is admin-only, checked before the body.
			r := ts.doToken(testAdminToken, method, ids.Replace(path), body)
			if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != codeTooLarge {
				t.Fatalf("status %d %s, want 413 too_large", r.status, r.body)
			}
			if !strings.Contains(string(r.body), strconv.Itoa(limit)) {
				t.Fatalf("message %s does not name the limit %d", r.body, limit)
			}
		})
	}
	if checked < 10 {
		t.Fatalf("only %d routes with a body found", checked)
	}
}

// TestCreateBodyAtTheLimit: a create whose body is exactly the JSON limit is taken,
// with or without an id (the id a server makes travels beside the body, never in it),
// and one byte more is 413.
func TestCreateBodyAtTheLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	body := func(id string, size int) string {
		head := `{"env":{"V":"` + strings.Repeat("a", 100<<10) + `"}` + id
		return head + strings.Repeat(" ", size-len(head)-1) + "}"
	}
	for _, id := range []string{"", `,"id":"at-limit"`} {
		if r := ts.do("POST", "/v1/sandboxes", body(id, maxJSONBody)); r.status != http.StatusCreated {
			t.Fatalf("a create of exactly %d bytes (id %q): %d %.300s", maxJSONBody, id, r.status, r.body)
		}
		if r := ts.do("POST", "/v1/sandboxes", body(id, maxJSONBody+1)); r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != codeTooLarge {
			t.Fatalf("a create of %d bytes (id %q): %d %.300s", maxJSONBody+1, id, r.status, r.body)
		}
	}
}

// TestNULRefused: a NUL byte in a command, argv, cwd, env, shell, path, id, tag,
// label (a process's or a sandbox's) or posted event type is 400 invalid_argument naming the field, on every route that takes one; before
// this, a NUL in an exec's command ran it and answered exit 126.
func TestNULRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("nul")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/nul/sessions", map[string]any{"id": "s1"})
	sb := "/v1/sandboxes/nul"
	tests := []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"exec command", "POST", sb + "/exec", map[string]any{"command": "echo a\x00b"}, "command"},
		{"exec argv", "POST", sb + "/exec", map[string]any{"argv": []string{"echo", "a\x00b"}}, "argv[1]"},
		{"exec argv0", "POST", sb + "/exec", map[string]any{"argv": []string{"ec\x00ho"}}, "argv[0]"},
		{"exec cwd", "POST", sb + "/exec", map[string]any{"command": "pwd", "cwd": "a\x00b"}, "cwd"},
		{"exec env name", "POST", sb + "/exec", map[string]any{"command": "env", "env": map[string]string{"A\x00B": "1"}}, "environment variable"},
		{"exec env value", "POST", sb + "/exec", map[string]any{"command": "env", "env": map[string]string{"A": "1\x002"}}, "environment variable"},
		{"process command", "POST", sb + "/processes", map[string]any{"command": "echo a\x00b"}, "command"},
		{"process argv", "POST", sb + "/processes", map[string]any{"argv": []string{"echo", "a\x00b"}}, "argv[1]"},
		{"process cwd", "POST", sb + "/processes", map[string]any{"command": "pwd", "cwd": "a\x00b"}, "cwd"},
		{"process tag", "POST", sb + "/processes", map[string]any{"command": "true", "tag": "a\x00b"}, "tag"},
		{"process label", "POST", sb + "/processes", map[string]any{"command": "true", "label": "a\x00b"}, "label"},
		{"process session", "POST", sb + "/processes", map[string]any{"command": "true", "session": "s\x001"}, "session"},
		{"session exec command", "POST", sb + "/sessions/s1/exec", map[string]any{"command": "echo a\x00b"}, "command"},
		{"session exec cwd", "POST", sb + "/sessions/s1/exec", map[string]any{"command": "pwd", "cwd": "a\x00b"}, "cwd"},
		{"session cwd", "POST", sb + "/sessions", map[string]any{"cwd": "a\x00b"}, "cwd"},
		{"session shell", "POST", sb + "/sessions", map[string]any{"shell": "ba\x00sh"}, "shell"},
		{"session id", "POST", sb + "/sessions", map[string]any{"id": "s\x002"}, "session id"},
		{"terminal cwd", "PUT", sb + "/terminals/t1", map[string]any{"cwd": "a\x00b"}, "cwd"},
		{"terminal shell", "PUT", sb + "/terminals/t2", map[string]any{"shell": "ba\x00sh"}, "shell"},
		{"sandbox cwd", "POST", "/v1/sandboxes", map[string]any{"id": "nul2", "cwd": "a\x00b"}, "cwd"},
		{"sandbox id", "POST", "/v1/sandboxes", map[string]any{"id": "n\x00l"}, "sandbox id"},
		{"sandbox env", "POST", "/v1/sandboxes", map[string]any{"env": map[string]string{"A": "\x00"}}, "environment variable"},
		{"sandbox label key", "POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"a\x00b": "v"}}, "label"},
		{"sandbox label value", "POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"a": "v\x00"}}, "label"},
		{"file read path", "GET", sb + "/files?path=a%00b", nil, "NUL"},
		{"file write path", "PUT", sb + "/files?path=a%00b", "x", "NUL"},
		{"file delete path", "DELETE", sb + "/files?path=a%00b", nil, "NUL"},
		{"mkdir path", "POST", sb + "/files/mkdir", map[string]any{"path": "a\x00b"}, "NUL"},
		{"path id", "GET", "/v1/sandboxes/nul%00x", nil, "sandbox id"},
		{"event type", "POST", sb + "/events", map[string]any{"type": "agent.a\x00b"}, "event type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
				t.Fatalf("status %d %s, want 400 invalid_argument", r.status, r.body)
			}
			if !strings.Contains(string(r.body), tt.field) {
				t.Fatalf("message %s does not name %q", r.body, tt.field)
			}
		})
	}
}

// TestTerminalSizeLimit: REST (process pty, terminal PUT and resize, process resize)
// and WebSocket resize messages share one bound, maxTermSize; over it REST is 400 and a
// WebSocket resize is ignored (bad control messages never end a terminal).
func TestTerminalSizeLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ts")
	sb := "/v1/sandboxes/ts"
	ts.must(http.StatusCreated, "PUT", sb+"/terminals/t1", map[string]any{"cols": maxTermSize, "rows": maxTermSize})
	var p processJSON
	ts.must(http.StatusCreated, "POST", sb+"/processes", map[string]any{"command": "exec cat", "pty": map[string]int{"cols": 80, "rows": 24}}).json(t, &p)
	over := maxTermSize + 1
	tests := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"terminal put at limit", "PUT", sb + "/terminals/t1", map[string]any{"cols": maxTermSize, "rows": 1}, http.StatusOK},
		{"terminal put over", "PUT", sb + "/terminals/t2", map[string]any{"cols": over, "rows": 24}, http.StatusBadRequest},
		{"terminal resize over", "POST", sb + "/terminals/t1/resize", map[string]any{"cols": 80, "rows": over}, http.StatusBadRequest},
		{"terminal resize 65535", "POST", sb + "/terminals/t1/resize", map[string]any{"cols": 65535, "rows": 24}, http.StatusBadRequest},
		{"terminal resize zero", "POST", sb + "/terminals/t1/resize", map[string]any{"cols": 0, "rows": 24}, http.StatusBadRequest},
		{"process pty over", "POST", sb + "/processes", map[string]any{"command": "true", "pty": map[string]int{"cols": over, "rows": 24}}, http.StatusBadRequest},
		{"process resize over", "POST", sb + "/processes/" + p.ID + "/resize", map[string]any{"cols": 80, "rows": over}, http.StatusBadRequest},
		{"process resize at limit", "POST", sb + "/processes/" + p.ID + "/resize", map[string]any{"cols": maxTermSize, "rows": maxTermSize}, http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.status == http.StatusBadRequest && !strings.Contains(string(r.body), strconv.Itoa(maxTermSize)) {
				t.Fatalf("message %s does not name the limit", r.body)
			}
		})
	}

	// Over the WebSocket, a resize over the bound is ignored: the size stays what the
	// last valid resize made it, which stty in the terminal reports.
	ws := ts.dialWS(sb + "/terminals/t1/ws")
	resize := func(cols, rows int) {
		b, _ := json.Marshal(map[string]any{"type": "resize", "cols": cols, "rows": rows})
		ws.send(t, websocket.MessageText, b)
	}
	resize(100, 30)
	resize(65535, 65535)
	resize(over, 40)
	ws.send(t, websocket.MessageBinary, []byte("stty size; echo size-$((6*7))\n"))
	ws.readUntil(t, 20*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "size-42") })
	if out := ws.output.String(); !strings.Contains(out, "30 100\r\n") {
		t.Fatalf("stty size after out-of-range resizes: %q, want 30 100", out)
	}
}

// TestOpenAPITermSize: gateway/openapi.json states maxTermSize as the maximum of every
// cols and rows, and 1 as the minimum (0 where 0 takes the default), so the schema and
// the server cannot drift apart again.
func TestOpenAPITermSize(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	found := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if m, ok := c.(map[string]any); ok && (k == "cols" || k == "rows") && m["type"] == "integer" {
					found++
					// A size at create may be 0, which takes the default (winSize).
					low := float64(1)
					if m["default"] != nil {
						low = 0
					}
					if m["maximum"] != float64(maxTermSize) || m["minimum"] != low {
						t.Errorf("%s/%s: minimum %v, maximum %v; want %v and %d", path, k, m["minimum"], m["maximum"], low, maxTermSize)
					}
				}
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(path+"/"+strconv.Itoa(i), c)
			}
		}
	}
	walk("", doc)
	if found < 8 {
		t.Fatalf("only %d cols/rows schemas found", found)
	}
}
