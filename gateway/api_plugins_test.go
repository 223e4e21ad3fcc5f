package gateway

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins/pluginstest"
)

var (
	pluginBuilds     sync.Once
	pluginBuilder    *pluginstest.Builder
	pluginBuildError error
)

// examplePlugin builds one of examples/plugins (Go) once per test binary.
func examplePlugin(t testing.TB, name string) string {
	t.Helper()
	pluginBuilds.Do(func() { pluginBuilder, pluginBuildError = pluginstest.NewBuilder() })
	if pluginBuildError != nil {
		t.Fatal(pluginBuildError)
	}
	path, err := pluginBuilder.Go(filepath.Join("..", "examples", "plugins", name))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTiersPlugin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{policyFile: examplePlugin(t, "tiers")})
	tests := []struct {
		tier             string
		maxProcesses     int
		maxExecTimeoutMs int64
		idleTTLMs        int64
	}{
		{"free", 2, 5000, 60000},
		{"pro", 32, 600000, 900000},
		{"other", 64, 600000, 900000},
	}
	for _, tt := range tests {
		t.Run(tt.tier, func(t *testing.T) {
			var sb sandboxJSON
			ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "tier-" + tt.tier, "labels": map[string]string{"tier": tt.tier}}).json(t, &sb)
			b := sb.Budget
			if b.MaxProcesses != tt.maxProcesses || b.MaxExecTimeoutMs != tt.maxExecTimeoutMs || b.IdleTTLMs != tt.idleTTLMs {
				t.Fatalf("budget %+v", b)
			}
		})
	}
	for i := 0; i < 2; i++ {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/tier-free/processes", map[string]any{"command": "sleep 30"})
	}
	r := ts.do("POST", "/v1/sandboxes/tier-free/processes", map[string]any{"command": "sleep 30"})
	if r.status != http.StatusTooManyRequests || r.errorCode(t) != codeBudgetExceeded {
		t.Fatalf("third process on free: %d %s", r.status, r.body)
	}
	r = ts.doToken(testAdminToken, "GET", "/metrics", nil)
	if !strings.Contains(string(r.body), "sandgate_plugin") {
		t.Fatalf("plugin metrics missing from /metrics")
	}
}

func TestGuardPlugin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{policyFile: examplePlugin(t, "guard"), policyConfig: "mkfs\nrm -rf /\n"})
	ts.sandbox("g1")
	tests := []struct {
		name, token, path string
		body              map[string]any
		status            int
		reason            string
	}{
		{"exec blocked", testToken, "/v1/sandboxes/g1/exec", map[string]any{"command": "echo mkfs.ext4"}, http.StatusForbidden, "blocked by guard: mkfs"},
		{"argv blocked", testToken, "/v1/sandboxes/g1/exec", map[string]any{"argv": []string{"rm", "-rf", "/"}}, http.StatusForbidden, "blocked by guard: rm -rf /"},
		{"process blocked", testToken, "/v1/sandboxes/g1/processes", map[string]any{"command": "mkfs /dev/null"}, http.StatusForbidden, "blocked by guard: mkfs"},
		{"harmless", testToken, "/v1/sandboxes/g1/exec", map[string]any{"command": "echo fine"}, http.StatusOK, ""},
		{"admin may", testAdminToken, "/v1/sandboxes/g1/exec", map[string]any{"command": "echo mkfs"}, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.doToken(tt.token, "POST", tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.reason != "" && (r.errorCode(t) != codeForbidden || !strings.Contains(string(r.body), tt.reason)) {
				t.Fatalf("body %s, want reason %q", r.body, tt.reason)
			}
		})
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/g1/sessions", map[string]any{"id": "s"})
	if r := ts.do("POST", "/v1/sandboxes/g1/sessions/s/exec", map[string]any{"command": "mkfs"}); r.status != http.StatusForbidden {
		t.Fatalf("session exec: %d %s", r.status, r.body)
	}
}

func TestPoolsPlugin(t *testing.T) {
	t.Parallel()
	// The node is in pool gpu: a sandbox may only be placed on a node its pool matches.
	ts := newTestServer(t, &serverOptions{policyFile: filepath.Join("..", "examples", "plugins", "pools", "pools.wasm"),
		config: func(c *Config) { c.Labels = map[string]string{"pool": "gpu"} }})
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "pl1", "labels": map[string]string{"pool": "gpu"}}).json(t, &sb)
	if len(sb.Pool) != 1 || sb.Pool["pool"] != "gpu" {
		t.Fatalf("pool %+v", sb.Pool)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "pl2"}).json(t, &sb)
	if sb.Pool != nil {
		t.Fatalf("pool without label: %+v", sb.Pool)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// A reloaded plugin is asked again for the budget of every sandbox.
func TestPluginReloadRefreshesBudgets(t *testing.T) {
	t.Parallel()
	policy := filepath.Join(t.TempDir(), "policy.wasm")
	copyFile(t, examplePlugin(t, "tiers"), policy)
	ts := newTestServer(t, &serverOptions{policyFile: policy})
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "rl", "labels": map[string]string{"tier": "free"}}).json(t, &sb)
	if sb.Budget.MaxProcesses != 2 {
		t.Fatalf("free tier budget %+v", sb.Budget)
	}
	copyFile(t, examplePlugin(t, "guard"), policy) // guard has no budget hook: operator defaults
	if err := ts.srv.ReloadPolicy(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the budget to follow the reloaded plugin", func() bool {
		ts.must(http.StatusOK, "GET", "/v1/sandboxes/rl", nil).json(t, &sb)
		return sb.Budget.MaxProcesses == 64
	})
}

// failingBudgetModule is a version 2 policy module, written out by hand, whose budget
// hook always answers 0 ("I failed") and which has no route hook.
func failingBudgetModule(t testing.TB) string {
	t.Helper()
	section := func(id byte, content ...byte) []byte { return append([]byte{id, byte(len(content))}, content...) }
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	var exports []byte
	exports = append(exports, 4)
	exports = append(append(exports, name("memory")...), 0x02, 0)
	exports = append(append(exports, name("sandgate_abi_version")...), 0x00, 0)
	exports = append(append(exports, name("sandgate_alloc")...), 0x00, 1)
	exports = append(append(exports, name("sandgate_budget")...), 0x00, 2)
	mod := []byte{0x00, 'a', 's', 'm', 1, 0, 0, 0}
	mod = append(mod, section(1, 3, 0x60, 0, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7e)...) // () -> i32, (i32) -> i32, (i32, i32) -> i64
	mod = append(mod, section(3, 3, 0, 1, 2)...)                                                                // three functions of those types
	mod = append(mod, section(5, 1, 0, 1)...)                                                                   // one memory of one page
	mod = append(mod, section(7, exports...)...)
	mod = append(mod, section(10, 3, 4, 0, 0x41, 2, 0x0b, 5, 0, 0x41, 0x80, 0x08, 0x0b, 4, 0, 0x42, 0, 0x0b)...) // 2; 1024; 0
	path := filepath.Join(t.TempDir(), "failing-budget.wasm")
	if err := os.WriteFile(path, mod, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFailingBudgetHookGivesDefaults: a plugin whose budget hook fails does not stop
// sandboxes from being made: they get the operator's default budget, as the plugin
// ABI says, and the failure is counted.
func TestFailingBudgetHookGivesDefaults(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{policyFile: failingBudgetModule(t)})
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "fb"}).json(t, &sb)
	if sb.Budget.MaxProcesses != 64 {
		t.Fatalf("budget %+v, want the defaults", sb.Budget)
	}
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/fb/exec", map[string]any{"command": "echo ok"}).json(t, &res)
	if res.Stdout != "ok\n" {
		t.Fatalf("exec in the sandbox: %+v", res)
	}
	metrics := ts.must(http.StatusOK, "GET", "/metrics", nil)
	if !strings.Contains(string(metrics.body), `sandgate_plugin_failures_total{hook="budget",kind="garbage"}`) {
		t.Fatal("the budget hook's failure is not counted in /metrics")
	}
}
