package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFlagErrors: bad tenancy, budget, advertise and node id flags, and a listen
// address other than loopback without a token, stop serve before it starts, with exit code
// 125 (an error of sandgate itself, as for every subcommand) and a message that says
// what is wrong.
func TestServeFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tokens file with an empty tenant", []string{"--tokens", file("empty.json", `{"t1": ""}`)}, "tenant name is empty"},
		{"tokens file with an unknown field", []string{"--tokens", file("field.json", `{"t1": {"tenant": "a", "root": true}}`)}, `unknown field "root"`},
		{"tokens file that is not JSON", []string{"--tokens", file("bad.json", `t1=acme`)}, "not JSON"},
		{"missing tokens file", []string{"--tokens", filepath.Join(dir, "nope.json")}, "failed to read tokens file"},
		{"--token given to a tenant", []string{"--token", "t0", "--tokens", file("clash.json", `{"t0": "acme"}`)}, "always an admin"},
		{"negative cap", []string{"--max-sandboxes-per-tenant", "-1"}, "--max-sandboxes-per-tenant"},
		{"no exited records", []string{"--max-exited-processes", "0"}, "--max-exited-processes must be 1 or more"},
		{"no sessions", []string{"--max-sessions", "0"}, "--max-sessions must be 1 or more"},
		{"negative terminals", []string{"--max-terminals", "-3"}, "--max-terminals must be 1 or more"},
		{"budget file with an unknown field", []string{"--budget", file("bfield.json", `{"max": {"memory": 1}}`)}, `unknown field "max.memory"`},
		{"budget default above max", []string{"--budget", file("babove.json", `{"default": {"pids": 9}, "max": {"pids": 8}}`)}, "pids 9 is above its max 8"},
		{"missing budget file", []string{"--budget", filepath.Join(dir, "nope-budget.json")}, "failed to read budget file"},
		{"--advertise on all interfaces", []string{"--advertise", "0.0.0.0:7070"}, "no address to advertise"},
		{"--raft-advertise on all interfaces", []string{"--raft-advertise", "[::]"}, "no address to advertise"},
		{"all interfaces without a token", []string{"--token=", "--listen", "0.0.0.0:0"}, "without a token: set --token or --tokens"},
		{"node id that is no id", []string{"--node-id", "Node!"}, `invalid node id "Node!"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--data", t.TempDir()}, tt.args...)
			code := cmdServe(context.Background(), args, &stdout, &stderr)
			if code != exitSandgate || !strings.HasPrefix(stderr.String(), "sandgate serve: ") || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 125 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestServeTenancy: with --tokens, each tenant's CLI sees its own sandboxes, the
// --token admin sees all, and --max-sandboxes-per-tenant caps each tenant.
func TestServeTenancy(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"tok-acme": "acme", "tok-globex": "globex"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const admin = "tok-admin"
	n := startNode(t, admin, "--tokens", tokens, "--max-sandboxes-per-tenant", "1")
	n.post(t, "tok-acme", "/v1/sandboxes", `{"id":"acme1"}`)
	if status, body := n.request(t, "tok-acme", "POST", "/v1/sandboxes", `{"id":"acme2"}`); status != http.StatusTooManyRequests ||
		!strings.Contains(body, "max_sandboxes_per_tenant") {
		t.Fatalf("acme's second sandbox: %d %s", status, body)
	}
	if status, body := n.request(t, "tok-globex", "GET", "/v1/sandboxes/acme1", ""); status != http.StatusNotFound {
		t.Fatalf("globex on acme's sandbox: %d %s", status, body)
	}
	if out, _, code := n.cli(t, "tok-globex", "sandboxes"); code != 0 || strings.Contains(out, "acme1") {
		t.Fatalf("globex's sandboxes: %d %q", code, out)
	}
	if _, errOut, code := n.cli(t, "tok-globex", "exec", "acme1", "--", "true"); code == 0 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("globex exec in acme's sandbox: %d %q", code, errOut)
	}
	if out, _, code := n.cli(t, admin, "sandboxes"); code != 0 || !strings.Contains(out, "acme1") {
		t.Fatalf("admin's sandboxes: %d %q", code, out)
	}
	if status, body := n.request(t, "tok-acme", "POST", "/v1/cluster/join", `{}`); status != http.StatusForbidden {
		t.Fatalf("acme joins a member: %d %s", status, body)
	}
}

// TestServeKeptLimits: --max-sessions and --max-terminals replace the defaults (256):
// with 1, a sandbox's second session or terminal is 429 naming the bound.
func TestServeKeptLimits(t *testing.T) {
	const admin = "tok-admin"
	n := startNode(t, admin, "--max-sessions", "1", "--max-terminals", "1", "--max-exited-processes", "5")
	n.post(t, admin, "/v1/sandboxes", `{"id":"kl"}`)
	n.post(t, admin, "/v1/sandboxes/kl/sessions", `{"id":"s1"}`)
	if status, body := n.request(t, admin, "POST", "/v1/sandboxes/kl/sessions", `{"id":"s2"}`); status != http.StatusTooManyRequests ||
		!strings.Contains(body, "max_sessions") {
		t.Fatalf("second session: %d %s", status, body)
	}
	if status, body := n.request(t, admin, "PUT", "/v1/sandboxes/kl/terminals/t1", `{}`); status != http.StatusCreated {
		t.Fatalf("first terminal: %d %s", status, body)
	}
	if status, body := n.request(t, admin, "PUT", "/v1/sandboxes/kl/terminals/t2", `{}`); status != http.StatusTooManyRequests ||
		!strings.Contains(body, "max_terminals") {
		t.Fatalf("second terminal: %d %s", status, body)
	}
}

func (n *node) request(tb testing.TB, token, method, path, body string) (int, string) {
	tb.Helper()
	req, _ := http.NewRequest(method, "http://"+n.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeBudget: the real binary takes the operator's defaults and maxima from
// --budget: a sandbox gets the defaults, and a bad file stops serve with exit code 125
// naming the field.
func TestServeBudget(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "budget.json")
	if err := os.WriteFile(good, []byte(`{"default": {"memory_bytes": 268435456, "pids": 64, "network": "none"},
		"max": {"memory_bytes": 1073741824, "pids": 128, "cpu_millis": 2000, "network": "host"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const admin = "tok-admin"
	n := startNode(t, admin, "--budget", good)
	body := n.post(t, admin, "/v1/sandboxes", `{"id":"b1"}`)
	var sb struct {
		Budget map[string]any `json:"budget"`
	}
	if err := json.Unmarshal([]byte(body), &sb); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	for k, want := range map[string]any{"memory_bytes": 268435456.0, "pids": 64.0, "network": "none", "cpu_millis": 1000.0, "disk_bytes": 1073741824.0} {
		if sb.Budget[k] != want {
			t.Fatalf("budget %s = %v, want %v (budget %v)", k, sb.Budget[k], want, sb.Budget)
		}
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"default": {"memory_bytes": 1, "pid": 3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildBinary(t), "serve", "--listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0", "--data", t.TempDir(), "--budget", bad)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSandgate || !strings.Contains(stderr.String(), `unknown field "default.pid"`) {
		t.Fatalf("serve with a bad budget file: %v, stderr %q; want exit 125 naming default.pid", err, stderr.String())
	}
}

// TestServeMetricsListen: with --metrics-listen, /metrics is served there without a
// token, and /metrics on --listen still needs one.
func TestServeMetricsListen(t *testing.T) {
	t.Parallel()
	metricsAddr := freeAddr(t)
	n := startNode(t, "tok-m", "--metrics-listen", metricsAddr)
	n.post(t, "tok-m", "/v1/sandboxes", `{"id":"m1"}`)
	tests := []struct {
		name, url string
		want      int
		has       string
	}{
		{"metrics listener without a token", "http://" + metricsAddr + "/metrics", http.StatusOK,
			`sandgate_http_requests_total{code="201",route="POST /v1/sandboxes"} 1`},
		{"API listener without a token", "http://" + n.addr + "/metrics", http.StatusUnauthorized, "unauthorized"},
		{"API route on the metrics listener", "http://" + metricsAddr + "/v1/sandboxes", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want || !strings.Contains(string(body), tt.has) {
				t.Fatalf("GET %s: %d %q; want %d with %q", tt.url, resp.StatusCode, body, tt.want, tt.has)
			}
		})
	}
}

// TestShownAddr: serve names the address --listen asked for, with the port bound: a
// listener on every interface is not shown as Go's [::].
func TestShownAddr(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr   *net.TCPAddr
		listen string
		want   string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070", "127.0.0.1:7070"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 7070}, "0.0.0.0:7070", "0.0.0.0:7070"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 41234}, "0.0.0.0:0", "0.0.0.0:41234"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 7070}, ":7070", "0.0.0.0:7070"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 7070}, "[::]:7070", "[::]:7070"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 7070}, "[::1]:7070", "[::1]:7070"},
	} {
		if got := shownAddr(tt.addr, tt.listen); got != tt.want {
			t.Errorf("shownAddr(%v, %q) = %q, want %q", tt.addr, tt.listen, got, tt.want)
		}
	}
}
