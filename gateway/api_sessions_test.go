package gateway

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("s1")
	var s sessionJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/s1/sessions", map[string]any{"id": "main", "env": map[string]string{"G": "g"}}).json(t, &s)
	if s.ID != "main" || s.Status != "ready" || s.Commands != 0 {
		t.Fatalf("created %+v", s)
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/s1/sessions", map[string]any{"id": "main", "env": map[string]string{"G": "g"}})
	for _, id := range []string{"", "Main", "-x"} {
		if r := ts.do("POST", "/v1/sandboxes/s1/sessions", map[string]any{"id": id}); r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Fatalf("session id %q: %d %s", id, r.status, r.body)
		}
	}
	if r := ts.do("POST", "/v1/sandboxes/s1/sessions", map[string]any{"id": "main", "env": map[string]string{"G": "other"}}); r.status != http.StatusConflict {
		t.Fatalf("alive with different settings: %d %s", r.status, r.body)
	}
	exec := func(cmd string) execJSON {
		t.Helper()
		var res execJSON
		ts.must(http.StatusOK, "POST", "/v1/sandboxes/s1/sessions/main/exec", map[string]any{"command": cmd}).json(t, &res)
		return res
	}
	exec("mkdir -p work && cd work && export A=1 && alias hi='echo hello' && f() { echo fn-$1; }")
	res := exec("pwd; echo $A $G; hi; f x; echo err >&2; (exit 7)")
	lines := strings.Split(res.Stdout, "\n")
	if !strings.HasSuffix(lines[0], "/work") || lines[1] != "1 g" || lines[2] != "hello" || lines[3] != "fn-x" {
		t.Fatalf("state did not persist: %q", res.Stdout)
	}
	if res.Stderr != "err\n" || res.ExitCode != 7 {
		t.Fatalf("stderr %q exit %d", res.Stderr, res.ExitCode)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/s1/sessions/main", nil).json(t, &s)
	if !strings.HasSuffix(s.Cwd, "/work") || s.Env["A"] != "1" || s.Commands != 2 || s.LastCommandAt == nil {
		t.Fatalf("session object %+v", s)
	}

	// Commands on one session run in arrival order; concurrent callers all get answers.
	var wg sync.WaitGroup
	statuses := make([]int, 5)
	for i := range statuses {
		wg.Go(func() {
			r, _ := ts.send(testToken, "POST", "/v1/sandboxes/s1/sessions/main/exec", map[string]any{"command": "true"})
			statuses[i] = r.status
		})
	}
	wg.Wait()
	for _, st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("concurrent session exec statuses %v", statuses)
		}
	}

	res = exec("exit 3")
	if res.ExitCode != 3 {
		t.Fatalf("exit: %+v", res)
	}
	r := ts.do("POST", "/v1/sandboxes/s1/sessions/main/exec", map[string]any{"command": "true"})
	if r.status != http.StatusConflict || r.errorCode(t) != codeConflict || !strings.Contains(string(r.body), "3") ||
		!strings.Contains(string(r.body), `"message":"session \"main\" is dead: `) || strings.Contains(string(r.body), "conflict:") {
		t.Fatalf("exec on dead session: %d %s", r.status, r.body)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/s1/sessions/main", nil).json(t, &s)
	if s.Status != "dead" {
		t.Fatalf("status %q", s.Status)
	}
	// Creating a session with a dead one's id replaces it.
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/s1/sessions", map[string]any{"id": "main"})
	if res := exec("echo again"); res.Stdout != "again\n" {
		t.Fatalf("replaced session: %+v", res)
	}

	var timed execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/s1/sessions/main/exec", map[string]any{"command": "echo before; sleep 30", "timeout_ms": 300}).json(t, &timed)
	if !timed.TimedOut || timed.ExitCode != 124 || timed.Stdout != "before\n" {
		t.Fatalf("timeout: %+v", timed)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/s1/sessions/main", nil).json(t, &s)
	if s.Status != "dead" || s.DeadReason == "" {
		t.Fatalf("after timeout %+v", s)
	}

	var list struct{ Sessions []sessionJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/s1/sessions", nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("list %+v", list)
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/s1/sessions/main", nil)
	if r := ts.do("GET", "/v1/sandboxes/s1/sessions/main", nil); r.status != http.StatusNotFound {
		t.Fatalf("after delete: %d", r.status)
	}
}

func TestSessionProcessFromSnapshot(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("s2")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/s2/sessions", map[string]any{"id": "w"})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/s2/sessions/w/exec", map[string]any{"command": "mkdir -p d && cd d && export V=snap"})
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/s2/processes", map[string]any{"command": "pwd; echo $V; cd /; export V=changed", "session": "w"}).json(t, &p)
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/s2/processes/"+p.ID+"?wait_ms=10000", nil)
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/s2/sessions/w/exec", map[string]any{"command": "pwd; echo $V"}).json(t, &res)
	if !strings.HasSuffix(strings.Split(res.Stdout, "\n")[0], "/d") || !strings.Contains(res.Stdout, "snap") {
		t.Fatalf("process wrote back into the session: %q", res.Stdout)
	}
	if r := ts.do("POST", "/v1/sandboxes/s2/processes", map[string]any{"command": "true", "session": "nope"}); r.status != http.StatusNotFound {
		t.Fatalf("unknown session: %d", r.status)
	}
	// A dead session's state can no longer be trusted: 409, saying why it died.
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/s2/sessions/w/exec", map[string]any{"command": "exit 3"})
	r := ts.do("POST", "/v1/sandboxes/s2/processes", map[string]any{"command": "true", "session": "w"})
	if r.status != http.StatusConflict || r.errorCode(t) != "conflict" || !strings.Contains(string(r.body), "status 3") {
		t.Fatalf("process from a dead session: %d %s", r.status, r.body)
	}
}

// TestSessionProcessCwdOutsideWorkspace: a process started from a session starts in
// the session's cwd also when the shell went outside the workspace (cd /tmp, as a
// shell may), and in the sandbox's cwd once the session's directory is gone.
func TestSessionProcessCwdOutsideWorkspace(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("sc")
	tests := []struct {
		name, setup, want string
	}{
		{"outside the workspace", "cd /tmp && export V=tmp", "/tmp\ntmp\n"},
		{"removed since", "mkdir -p gone && cd gone && rmdir ../gone && export V=gone", ts.guestWorkspace("sc") + "\ngone\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("s%d", i)
			steps := []struct {
				want         int
				method, path string
				body         any
			}{
				{http.StatusCreated, "POST", "/v1/sandboxes/sc/sessions", map[string]any{"id": id}},
				{http.StatusOK, "POST", "/v1/sandboxes/sc/sessions/" + id + "/exec", map[string]any{"command": tt.setup}},
				{http.StatusCreated, "POST", "/v1/sandboxes/sc/processes", map[string]any{"command": "pwd; echo $V", "session": id}},
			}
			var r response
			for _, st := range steps {
				if r = ts.do(st.method, st.path, st.body); r.status != st.want {
					t.Fatalf("%s %s: status %d, want %d: %s", st.method, st.path, r.status, st.want, r.body)
				}
			}
			var p processJSON
			r.json(t, &p)
			base := "/v1/sandboxes/sc/processes/" + p.ID
			if r := ts.do("GET", base+"?wait_ms=10000", nil); r.status != http.StatusOK {
				t.Fatalf("wait: status %d: %s", r.status, r.body)
			}
			if got := outputOf(t, ts.readSSE(base+"/output", "", 10*time.Second, lastIs("exit"))); got != tt.want {
				t.Fatalf("output %q, want %q", got, tt.want)
			}
			if want := strings.SplitN(tt.want, "\n", 2)[0]; p.Cwd != want {
				t.Fatalf("process cwd %q, want %q", p.Cwd, want)
			}
		})
	}
}

// TestBadCwd: a cwd that does not exist, or is a file, is 400 invalid_argument with a
// message that names it, on session create and on a session's exec alike (and on the
// routes that start processes); no message repeats a "failed to …" phrase, and the
// session stays usable after a rejected per-call cwd.
func TestBadCwd(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("bc")
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/bc/files?path=file", "x")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/bc/sessions", map[string]any{"id": "s"})
	repeated := regexp.MustCompile(`(failed to [a-z]+[^:]*): (.*: )?failed to [a-z]+`)
	tests := []struct {
		name, method, path string
		body               map[string]any
		want               string
	}{
		{"session missing", "POST", "/v1/sandboxes/bc/sessions", map[string]any{"cwd": "nonexist"}, `cwd \"nonexist\" does not exist`},
		{"session file", "POST", "/v1/sandboxes/bc/sessions", map[string]any{"cwd": "file"}, `cwd \"file\" is not a directory`},
		{"session exec missing", "POST", "/v1/sandboxes/bc/sessions/s/exec", map[string]any{"command": "pwd", "cwd": "nonexist"}, `cwd \"nonexist\" does not exist`},
		{"session exec file", "POST", "/v1/sandboxes/bc/sessions/s/exec", map[string]any{"command": "pwd", "cwd": "file"}, `cwd \"file\" is not a directory`},
		{"exec", "POST", "/v1/sandboxes/bc/exec", map[string]any{"command": "pwd", "cwd": "nonexist"}, `cwd \"nonexist\"`},
		{"process", "POST", "/v1/sandboxes/bc/processes", map[string]any{"command": "pwd", "cwd": "nonexist"}, `cwd \"nonexist\"`},
		{"terminal", "PUT", "/v1/sandboxes/bc/terminals/t", map[string]any{"cwd": "nonexist"}, `cwd \"nonexist\"`},
	}
	for _, tt := range tests {
		r := ts.do(tt.method, tt.path, tt.body)
		if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Errorf("%s: %d %s, want 400 invalid_argument", tt.name, r.status, r.body)
			continue
		}
		if msg := string(r.body); !strings.Contains(msg, tt.want) || repeated.MatchString(msg) {
			t.Errorf("%s: %s, want a message with %s and no repeated phrase", tt.name, msg, tt.want)
		}
	}
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/bc/sessions/s/exec", map[string]any{"command": "pwd"}).json(t, &res)
	if res.ExitCode != 0 || res.Stdout != ts.guestWorkspace("bc")+"\n" || res.Stderr != "" {
		t.Fatalf("exec after rejected cwds: %+v", res)
	}
	var s sessionJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/bc/sessions/s", nil).json(t, &s)
	if s.Status != "ready" || s.Commands != 1 {
		t.Fatalf("session after rejected cwds %+v, want ready with 1 command", s)
	}
}
