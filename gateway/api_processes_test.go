package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestProcessLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("p1")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/p1/processes",
		map[string]any{"command": "echo one; echo two >&2; read line; echo got-$line", "tag": "web", "label": "Dev"}).json(t, &p)
	if !strings.HasPrefix(p.ID, "proc_") || p.Status != "running" || p.PID == 0 || *p.Tag != "web" || p.ExitCode != nil {
		t.Fatalf("created %+v", p)
	}
	base := "/v1/sandboxes/p1/processes/" + p.ID
	ts.must(http.StatusNoContent, "POST", base+"/input", map[string]any{"text": "abc\n"})
	ts.must(http.StatusOK, "GET", base+"?wait_ms=10000", nil).json(t, &p)
	if p.Status != "exited" || p.ExitCode == nil || *p.ExitCode != 0 || p.ExitedAt == nil {
		t.Fatalf("after wait: %+v", p)
	}
	if r := ts.do("POST", base+"/input", map[string]any{"text": "late"}); r.status != http.StatusConflict {
		t.Fatalf("input after exit: %d %s", r.status, r.body)
	}
	events := ts.readSSE(base+"/output", "", 10*time.Second, lastIs("exit"))
	if got := outputOf(t, events); !strings.Contains(got, "one\n") || !strings.Contains(got, "two\n") || !strings.Contains(got, "got-abc\n") {
		t.Fatalf("output %q", got)
	}
	if events[len(events)-1].data != `{"exit_code":0,"signal":null}` {
		t.Fatalf("exit event %q", events[len(events)-1].data)
	}

	var list struct{ Processes []processJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/p1/processes?status=exited&tag=web", nil).json(t, &list)
	if len(list.Processes) != 1 {
		t.Fatalf("filtered list: %+v", list)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/p1/processes?status=running", nil).json(t, &list)
	if len(list.Processes) != 0 {
		t.Fatalf("running list: %+v", list)
	}
	if r := ts.do("GET", "/v1/sandboxes/p1/processes?status=zombie", nil); r.status != http.StatusBadRequest {
		t.Fatalf("bad status filter: %d", r.status)
	}
	ts.must(http.StatusNoContent, "DELETE", base, nil)
	if r := ts.do("GET", base, nil); r.status != http.StatusNotFound {
		t.Fatalf("after delete: %d", r.status)
	}
}

func TestProcessSignals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("p2")
	tests := []struct {
		name   string
		signal any
		want   string
	}{
		{"by name", "SIGINT", "SIGINT"},
		{"short name", "TERM", "SIGTERM"},
		{"by number", 9, "SIGKILL"},
		{"number as string", "15", "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p processJSON
			ts.must(http.StatusCreated, "POST", "/v1/sandboxes/p2/processes", map[string]any{"argv": []string{"sleep", "30"}}).json(t, &p)
			base := "/v1/sandboxes/p2/processes/" + p.ID
			ts.must(http.StatusNoContent, "POST", base+"/signal", map[string]any{"signal": tt.signal})
			ts.must(http.StatusOK, "GET", base+"?wait_ms=10000", nil).json(t, &p)
			if p.Signal == nil || *p.Signal != tt.want || p.ExitCode != nil {
				t.Fatalf("after %v: %+v", tt.signal, p)
			}
		})
	}
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/p2/processes", map[string]any{"argv": []string{"sleep", "30"}}).json(t, &p)
	for _, bad := range []any{"SIGNOPE", 999, true} {
		if r := ts.do("POST", "/v1/sandboxes/p2/processes/"+p.ID+"/signal", map[string]any{"signal": bad}); r.status != http.StatusBadRequest {
			t.Fatalf("signal %v: %d", bad, r.status)
		}
	}
	if r := ts.do("POST", "/v1/sandboxes/p2/processes/"+p.ID+"/resize", map[string]any{"cols": 100, "rows": 30}); r.status != http.StatusConflict {
		t.Fatalf("resize of a pipe process: %d %s", r.status, r.body)
	}
}

func TestOutputResume(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("p3")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/p3/processes", map[string]any{"command": "seq 1 2000"}).json(t, &p)
	base := "/v1/sandboxes/p3/processes/" + p.ID
	ts.must(http.StatusOK, "GET", base+"?wait_ms=10000", nil)
	var want strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	all := ts.readSSE(base+"/output", "", 10*time.Second, lastIs("exit"))
	if got := outputOf(t, all); got != want.String() {
		t.Fatalf("full output differs: %d bytes, want %d", len(got), want.Len())
	}
	// Resume from the id of an event in the middle, by query and by Last-Event-ID.
	mid := all[len(all)/2]
	off, _ := strconv.Atoi(mid.id)
	for _, viaHeader := range []bool{false, true} {
		path, lastID := base+"/output?offset="+mid.id, ""
		if viaHeader {
			path, lastID = base+"/output?offset=0", mid.id
		}
		rest := ts.readSSE(path, lastID, 10*time.Second, lastIs("exit"))
		if got := outputOf(t, rest); got != want.String()[off:] {
			t.Fatalf("resume (header %v) at %d: %d bytes, want %d", viaHeader, off, len(got), want.Len()-off)
		}
	}
}

func TestProcessWebSocket(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("p4")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/p4/processes",
		map[string]any{"command": "cat", "pty": map[string]int{"cols": 80, "rows": 24}}).json(t, &p)
	path := "/v1/sandboxes/p4/processes/" + p.ID + "/ws"
	a, b := ts.dialWS(path), ts.dialWS(path)
	for _, c := range []*wsClient{a, b} {
		c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	}
	a.send(t, websocket.MessageBinary, []byte("from-a\r"))
	b.send(t, websocket.MessageBinary, []byte("from-b\r"))
	for _, c := range []*wsClient{a, b} {
		c.readUntil(t, 10*time.Second, func(c *wsClient) bool {
			return strings.Count(c.output.String(), "from-a") >= 1 && strings.Count(c.output.String(), "from-b") >= 1
		})
	}
	a.send(t, websocket.MessageText, []byte(`{"type":"resize","cols":120,"rows":40}`))
	a.send(t, websocket.MessageText, []byte(`{"type":"signal","signal":"SIGKILL"}`))
	for _, c := range []*wsClient{a, b} {
		st := c.readUntil(t, 10*time.Second, func(c *wsClient) bool { return false })
		if st != websocket.StatusNormalClosure || c.control("exit") == nil {
			t.Fatalf("close %v, exit %v", st, c.control("exit"))
		}
	}
	if r := ts.do("GET", "/v1/sandboxes/p4/processes/proc_nope/ws", nil); r.status != http.StatusNotFound {
		t.Fatalf("unknown process ws: %d", r.status)
	}
}

// TestProcessPTYField: pty is a size object, or true for 80x24; false and null mean
// pipes; anything else is 400.
func TestProcessPTYField(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ptyf")
	tests := []struct {
		name string
		pty  any
		want bool // a PTY; only for status 201
		code string
	}{
		{name: "size", pty: map[string]int{"cols": 100, "rows": 30}, want: true},
		{name: "empty object", pty: map[string]int{}, want: true},
		{name: "true", pty: true, want: true},
		{name: "false", pty: false},
		{name: "null", pty: nil},
		{name: "string", pty: "yes", code: codeInvalidArgument},
		{name: "unknown field", pty: map[string]int{"width": 80}, code: codeInvalidArgument},
		{name: "size too big", pty: map[string]int{"cols": 70000}, code: codeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ts.do("POST", "/v1/sandboxes/ptyf/processes", map[string]any{"command": "true", "pty": tt.pty})
			if tt.code != "" {
				if r.status != http.StatusBadRequest || r.errorCode(t) != tt.code {
					t.Fatalf("got %d %s, want 400 %s", r.status, r.body, tt.code)
				}
				return
			}
			if r.status != http.StatusCreated {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			var p processJSON
			r.json(t, &p)
			if p.PTY != tt.want {
				t.Fatalf("pty %v, want %v", p.PTY, tt.want)
			}
		})
	}
}
