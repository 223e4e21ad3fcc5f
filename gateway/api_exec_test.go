package gateway

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestExec(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "e1", "env": map[string]string{"SB": "sandbox", "B": "base"}})
	tests := []struct {
		name   string
		body   map[string]any
		exit   int
		stdout string
		stderr string
		timed  bool
	}{
		{"shell", map[string]any{"command": "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n", false},
		{"argv", map[string]any{"argv": []string{"printf", "%s|", "a b", "c"}}, 0, "a b|c|", "", false},
		{"no trailing newline kept exact", map[string]any{"command": "printf 'x\\000y'"}, 0, "x\x00y", "", false},
		{"env overlay", map[string]any{"command": "echo $SB $B", "env": map[string]string{"B": "call"}}, 0, "sandbox call\n", "", false},
		{"stdin given", map[string]any{"command": "cat", "stdin": "hello"}, 0, "hello", "", false},
		{"stdin empty by default", map[string]any{"command": "cat; echo done"}, 0, "done\n", "", false},
		{"missing binary", map[string]any{"argv": []string{"no-such-binary-xyz"}}, 127, "", "", false},
		{"timeout", map[string]any{"command": "echo partial; sleep 30", "timeout_ms": 300}, 124, "partial\n", "", true},
		{"cwd", map[string]any{"command": "mkdir -p sub/dir && cd sub/dir && pwd"}, 0, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res execJSON
			ts.must(http.StatusOK, "POST", "/v1/sandboxes/e1/exec", tt.body).json(t, &res)
			if res.ExitCode != tt.exit || res.TimedOut != tt.timed {
				t.Fatalf("exit %d timed_out %v, want %d %v (%+v)", res.ExitCode, res.TimedOut, tt.exit, tt.timed, res)
			}
			if tt.stdout != "" && res.Stdout != tt.stdout {
				t.Fatalf("stdout %q, want %q", res.Stdout, tt.stdout)
			}
			if tt.stderr != "" && res.Stderr != tt.stderr {
				t.Fatalf("stderr %q, want %q", res.Stderr, tt.stderr)
			}
			if tt.exit == 127 && res.Stderr == "" {
				t.Fatalf("missing binary without a reason on stderr")
			}
		})
	}
}

func TestExecIsStateless(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("e2")
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/e2/exec", map[string]any{"command": "pwd"}).json(t, &res)
	home := strings.TrimSpace(res.Stdout)
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/e2/exec", map[string]any{"command": "mkdir -p d; cd d; export X=1"})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/e2/exec", map[string]any{"command": "pwd; echo \"x=$X\""}).json(t, &res)
	if res.Stdout != home+"\nx=\n" {
		t.Fatalf("state leaked between calls: %q (home %q)", res.Stdout, home)
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/e2/exec", map[string]any{"command": "pwd", "cwd": "d"}).json(t, &res)
	if res.Stdout != home+"/d\n" {
		t.Fatalf("cwd: %q", res.Stdout)
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/e2/exec", map[string]any{"command": "printf '\\377\\376'"}).json(t, &res)
	if raw, _ := base64.StdEncoding.DecodeString(res.StdoutBase64); string(raw) != "\xff\xfe" {
		t.Fatalf("non-UTF-8 output not exact: %+v", res)
	}
}

func TestExecBadRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("e3")
	tests := []struct {
		name string
		body any
		code string
	}{
		{"neither command nor argv", map[string]any{}, codeInvalidArgument},
		{"both", map[string]any{"command": "x", "argv": []string{"x"}}, codeInvalidArgument},
		{"negative timeout", map[string]any{"command": "x", "timeout_ms": -1}, codeInvalidArgument},
		{"cwd outside", map[string]any{"command": "pwd", "cwd": "../.."}, codeInvalidArgument},
		{"bad env name", map[string]any{"command": "x", "env": map[string]string{"A=B": "1"}}, codeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", "/v1/sandboxes/e3/exec", tt.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != tt.code {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	if r := ts.do("POST", "/v1/sandboxes/nope/exec", map[string]any{"command": "true"}); r.status != http.StatusNotFound {
		t.Fatalf("unknown sandbox: %d", r.status)
	}
}

// TestHugeTimeouts: a timeout_ms longer than a time.Duration holds is the longest
// timeout (then clamped to the budget), never a number that wrapped around: 2^64 ns
// is 18446744073709.55 ms, so 18446744073710 ms used to be half a millisecond and
// killed the command at once.
func TestHugeTimeouts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ht")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ht/sessions", map[string]any{"id": "s1"})
	const huge = 18446744073710
	cmd := "sleep 0.2; echo done"
	tests := []struct{ name, path string }{
		{"exec", "/v1/sandboxes/ht/exec"},
		{"session exec", "/v1/sandboxes/ht/sessions/s1/exec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res execJSON
			r := ts.do("POST", tt.path, map[string]any{"command": cmd, "timeout_ms": huge})
			if r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			r.json(t, &res)
			if res.TimedOut || res.ExitCode != 0 || res.Stdout != "done\n" {
				t.Fatalf("result %+v, want done without a timeout", res)
			}
		})
	}
	t.Run("process", func(t *testing.T) {
		var p processJSON
		r := ts.do("POST", "/v1/sandboxes/ht/processes", map[string]any{"command": cmd, "timeout_ms": huge, "keep_ms": huge})
		if r.status != http.StatusCreated {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		r.json(t, &p)
		r = ts.do("GET", "/v1/sandboxes/ht/processes/"+p.ID+"?wait_ms=10000", nil)
		r.json(t, &p)
		if p.Status != "exited" || p.ExitCode == nil || *p.ExitCode != 0 {
			t.Fatalf("process %+v, want exit code 0 (no timeout)", p)
		}
	})
	// wait_ms is clamped to its maximum the same way: a huge one waits.
	t.Run("wait_ms", func(t *testing.T) {
		var p processJSON
		r := ts.do("POST", "/v1/sandboxes/ht/processes", map[string]any{"command": "sleep 0.3"})
		if r.status != http.StatusCreated {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		r.json(t, &p)
		r = ts.do("GET", fmt.Sprintf("/v1/sandboxes/ht/processes/%s?wait_ms=%d", p.ID, huge), nil)
		r.json(t, &p)
		if r.status != http.StatusOK || p.Status != "exited" {
			t.Fatalf("process %+v after a huge wait_ms, want it waited for", p)
		}
	})
}
