package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestItemLimits: every string and map a request hands the server to keep (labels,
// env, cwd, shell, a process's command, argv, tag and label, a member's labels and
// addresses) has a bound, and a request
// past it is refused in the contract's shape naming the bound: 413 too_large for an
// item too large, 400 invalid_argument for a path longer than a path can be. The same
// item at its bound is accepted.
func TestItemLimits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("il")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/il/sessions", map[string]any{"id": "s1"})
	vars := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("V%d", i)] = "x"
		}
		return m
	}
	labels := func(n, keyLen, valueLen int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			k := fmt.Sprintf("k%d-", i)
			m[k+strings.Repeat("k", keyLen-len(k))] = strings.Repeat("v", valueLen)
		}
		return m
	}
	// member is a join request for a member that never starts, with fields replaced.
	member := func(with map[string]any) map[string]any {
		m := map[string]any{"id": "limits-joiner", "raft_addr": "127.0.0.1:1", "http_addr": "127.0.0.1:2"}
		for k, v := range with {
			m[k] = v
		}
		return m
	}
	longValue := map[string]string{"BIG": strings.Repeat("a", runtime.MaxEnvValueBytes+1)}
	longPath := strings.Repeat("d/", maxPathBytes/2+1)
	longCmd := "true " + strings.Repeat("x", maxCommandBytes)
	sb := "/v1/sandboxes/il"
	tests := []struct {
		name   string
		method string
		path   string
		body   map[string]any
		status int
		names  string // what the message must hold
	}{
		{"sandbox env vars", "POST", "/v1/sandboxes", map[string]any{"env": vars(runtime.MaxEnvVars + 1)}, 413, "env_vars"},
		{"sandbox env value", "POST", "/v1/sandboxes", map[string]any{"env": longValue}, 413, "env_value_bytes"},
		{"sandbox label count", "POST", "/v1/sandboxes", map[string]any{"labels": labels(maxLabels+1, 8, 8)}, 413, strconv.Itoa(maxLabels)},
		{"sandbox label key", "POST", "/v1/sandboxes", map[string]any{"labels": labels(1, maxLabelKeyBytes+1, 8)}, 413, strconv.Itoa(maxLabelKeyBytes)},
		{"sandbox label value", "POST", "/v1/sandboxes", map[string]any{"labels": labels(1, 8, maxLabelValueBytes+1)}, 413, strconv.Itoa(maxLabelValueBytes)},
		{"sandbox cwd", "POST", "/v1/sandboxes", map[string]any{"cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"session env", "POST", sb + "/sessions", map[string]any{"env": vars(runtime.MaxEnvVars + 1)}, 413, "env_vars"},
		{"session cwd", "POST", sb + "/sessions", map[string]any{"cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"session shell", "POST", sb + "/sessions", map[string]any{"shell": longPath + "bash"}, 400, strconv.Itoa(maxPathBytes)},
		{"session exec env", "POST", sb + "/sessions/s1/exec", map[string]any{"command": "true", "env": longValue}, 413, "env_value_bytes"},
		{"session exec cwd", "POST", sb + "/sessions/s1/exec", map[string]any{"command": "true", "cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"terminal env", "PUT", sb + "/terminals/t1", map[string]any{"env": vars(runtime.MaxEnvVars + 1)}, 413, "env_vars"},
		{"terminal cwd", "PUT", sb + "/terminals/t1", map[string]any{"cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"terminal shell", "PUT", sb + "/terminals/t1", map[string]any{"shell": longPath + "bash"}, 400, strconv.Itoa(maxPathBytes)},
		{"process env", "POST", sb + "/processes", map[string]any{"command": "true", "env": longValue}, 413, "env_value_bytes"},
		{"process cwd", "POST", sb + "/processes", map[string]any{"command": "true", "cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"process command", "POST", sb + "/processes", map[string]any{"command": longCmd}, 413, strconv.Itoa(maxCommandBytes)},
		{"process argv", "POST", sb + "/processes", map[string]any{"argv": []string{"true", longCmd}}, 413, strconv.Itoa(maxCommandBytes)},
		{"process tag", "POST", sb + "/processes", map[string]any{"command": "true", "tag": strings.Repeat("t", maxTagBytes+1)}, 413, strconv.Itoa(maxTagBytes)},
		{"process label", "POST", sb + "/processes", map[string]any{"command": "true", "label": strings.Repeat("l", maxTagBytes+1)}, 413, strconv.Itoa(maxTagBytes)},
		{"exec env", "POST", sb + "/exec", map[string]any{"command": "true", "env": vars(runtime.MaxEnvVars + 1)}, 413, "env_vars"},
		{"exec cwd", "POST", sb + "/exec", map[string]any{"command": "true", "cwd": longPath}, 400, strconv.Itoa(maxPathBytes)},
		{"exec command", "POST", sb + "/exec", map[string]any{"command": longCmd}, 413, strconv.Itoa(maxCommandBytes)},
		{"command with its NUL over MAX_ARG_STRLEN", "POST", sb + "/processes", map[string]any{"command": "true " + strings.Repeat("x", maxCommandBytes-5)}, 413, strconv.Itoa(maxCommandBytes)},
		{"env variable with NAME= and NUL over MAX_ARG_STRLEN", "POST", sb + "/processes", map[string]any{"command": "true", "env": map[string]string{"BIG": strings.Repeat("a", runtime.MaxEnvValueBytes-4)}}, 413, "env_value_bytes"},
		{"argv program name too long", "POST", sb + "/processes", map[string]any{"argv": []string{"/" + strings.Repeat("b", 256)}}, 400, "too long"},
		{"exec argv", "POST", sb + "/exec", map[string]any{"argv": []string{"true", longCmd}}, 413, strconv.Itoa(maxCommandBytes)},
		{"member labels", "POST", "/v1/cluster/join", member(map[string]any{"labels": labels(maxLabels+1, 8, 8)}), 413, strconv.Itoa(maxLabels)},
		{"member label value", "POST", "/v1/cluster/join", member(map[string]any{"labels": labels(1, 8, maxLabelValueBytes+1)}), 413, strconv.Itoa(maxLabelValueBytes)},
		{"member raft_addr", "POST", "/v1/cluster/join", member(map[string]any{"raft_addr": strings.Repeat("h", maxAddrBytes) + ":1"}), 400, strconv.Itoa(maxAddrBytes)},
		{"member http_addr", "POST", "/v1/cluster/join", member(map[string]any{"http_addr": "no-port"}), 400, "host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := testToken
			if strings.HasPrefix(tt.path, "/v1/cluster/") {
				token = testAdminToken // membership is an admin's to change
			}
			r := ts.doToken(token, tt.method, tt.path, tt.body)
			code := codeTooLarge
			if tt.status == http.StatusBadRequest {
				code = codeInvalidArgument
			}
			if r.status != tt.status || r.errorCode(t) != code {
				t.Fatalf("status %d %.300s, want %d %s", r.status, r.body, tt.status, code)
			}
			if !strings.Contains(string(r.body), tt.names) {
				t.Fatalf("message %.300s does not name %s", r.body, tt.names)
			}
		})
	}

	// At the bounds, the same items are taken.
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "il-max",
		"labels": labels(maxLabels, maxLabelKeyBytes, maxLabelValueBytes), "env": vars(runtime.MaxEnvVars)})
	ts.must(http.StatusCreated, "POST", sb+"/processes", map[string]any{"command": "true",
		"tag": strings.Repeat("t", maxTagBytes), "label": strings.Repeat("l", maxTagBytes)})
	// A command and a variable at exactly MAX_ARG_STRLEN with their NULs start.
	var res execJSON
	ts.must(http.StatusOK, "POST", sb+"/exec", map[string]any{"command": "true " + strings.Repeat("x", maxCommandBytes-6),
		"env": map[string]string{"BIG": strings.Repeat("a", runtime.MaxEnvValueBytes-5)}}).json(t, &res)
	if res.ExitCode != 0 {
		t.Fatalf("exec at the bounds: %+v", res)
	}
	ts.must(http.StatusCreated, "POST", sb+"/processes", map[string]any{"command": "true " + strings.Repeat("x", maxCommandBytes-6),
		"env": map[string]string{"BIG": strings.Repeat("a", runtime.MaxEnvValueBytes-5)}})
}

// TestBigEnvironmentRuns: an environment near its bound (~1 MiB) and a command near
// its bound (~128 KiB), both accepted, reach the command whole through every way a
// command starts, on every driver (the namespace driver hands them to the sandbox's
// init in a memory file when they do not fit one message).
func TestBigEnvironmentRuns(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	env := make(map[string]string)
	for i := range 7 {
		env[fmt.Sprintf("V%d", i)] = strings.Repeat(string(rune('a'+i)), 120<<10)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "bigenv", "env": env})
	sb := "/v1/sandboxes/bigenv"
	arg := strings.Repeat("y", 100<<10)
	script := `printf '%s %s %s' "${#V0}" "${#V6}" "${#1}"`
	want := fmt.Sprintf("%d %d %d", 120<<10, 120<<10, 100<<10)

	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	ts.must(http.StatusOK, "POST", sb+"/exec", map[string]any{"argv": []string{"sh", "-c", script, "sh", arg}}).json(t, &res)
	if res.ExitCode != 0 || res.Stdout != want {
		t.Fatalf("exec: exit %d, stdout %q, stderr %.200q; want %q", res.ExitCode, res.Stdout, res.Stderr, want)
	}
	var p processJSON
	ts.must(http.StatusCreated, "POST", sb+"/processes", map[string]any{"argv": []string{"sh", "-c", script, "sh", arg}}).json(t, &p)
	events := ts.readSSE(sb+"/processes/"+p.ID+"/output", "", 10*time.Second, lastIs("exit"))
	if out := outputOf(t, events); out != want {
		t.Fatalf("process output %q, want %q", out, want)
	}
	ts.must(http.StatusCreated, "POST", sb+"/sessions", map[string]any{"id": "s1"})
	ts.must(http.StatusOK, "POST", sb+"/sessions/s1/exec", map[string]any{"command": `printf '%s' "${#V6}"`}).json(t, &res)
	if res.ExitCode != 0 || res.Stdout != strconv.Itoa(120<<10) {
		t.Fatalf("session exec: exit %d, stdout %q, stderr %.200q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestNodeLabelsBounded: a node's own labels (--labels) go into the replicated member
// table as a joining member's do, so New refuses them past the same bounds.
func TestNodeLabelsBounded(t *testing.T) {
	t.Parallel()
	for _, labels := range []map[string]string{
		{"zone": strings.Repeat("z", maxLabelValueBytes+1)},
		{strings.Repeat("k", maxLabelKeyBytes+1): "v"},
	} {
		c := Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Labels: labels}
		srv, err := New(t.Context(), &c)
		if err == nil {
			_ = srv.Shutdown(t.Context())
			t.Fatal("New started with labels past the bounds")
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "node labels") {
			t.Fatalf("New = %v, want ErrConfig naming the node labels", err)
		}
	}
}
