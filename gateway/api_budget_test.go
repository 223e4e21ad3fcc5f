package gateway

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

// TestBudgetDefaultsRendered: with no policy and no --budget, a sandbox's budget object
// has every field of the API, at the API's defaults; usage is there while the sandbox
// is active and gone once it is passivated; /metrics sums the usage.
func TestBudgetDefaultsRendered(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	r := ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "b1"})
	var raw struct {
		Budget map[string]any  `json:"budget"`
		Usage  *map[string]any `json:"usage"`
	}
	r.json(t, &raw)
	want := map[string]any{
		"idle_ttl_ms": 900000.0, "max_duration_ms": 86400000.0, "max_processes": 64.0, "max_exec_timeout_ms": 600000.0,
		"output_buffer_bytes": 1048576.0, "memory_bytes": 536870912.0, "pids": 256.0, "cpu_millis": 1000.0,
		"disk_bytes": 1073741824.0, "network": "loopback",
	}
	if len(raw.Budget) != len(want) {
		t.Fatalf("budget %v, want %v", raw.Budget, want)
	}
	for k, v := range want {
		if raw.Budget[k] != v {
			t.Fatalf("budget %s = %v, want %v", k, raw.Budget[k], v)
		}
	}

	var sb sandboxJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/b1", nil).json(t, &sb)
	if sb.Usage == nil || sb.Usage.DiskBytes <= 0 {
		t.Fatalf("active sandbox usage %+v, want the workspace's disk usage", sb.Usage)
	}
	// A later request runs after the GET's group published its info (actor.Stats).
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/b1", nil)
	if got := metricValue(t, ts, "sandgate_usage_disk_bytes"); got != sb.Usage.DiskBytes {
		t.Fatalf("sandgate_usage_disk_bytes = %d, want the active sandbox's %d", got, sb.Usage.DiskBytes)
	}
	for _, name := range []string{"sandgate_usage_memory_bytes", "sandgate_usage_pids", "sandgate_exited_records_dropped_total"} {
		metricValue(t, ts, name) // present
	}

	if err := ts.srv.node.Deactivate(context.Background(), "b1"); err != nil {
		t.Fatal(err)
	}
	r = ts.must(http.StatusOK, "GET", "/v1/sandboxes", nil)
	if strings.Contains(string(r.body), `"usage"`) {
		t.Fatalf("passivated sandbox listed with usage: %s", r.body)
	}
	if got := metricValue(t, ts, "sandgate_usage_disk_bytes"); got != 0 {
		t.Fatalf("sandgate_usage_disk_bytes = %d with no active sandbox", got)
	}
}

// metricValue returns the value of the unlabelled gauge name from /metrics.
func metricValue(t *testing.T, ts *testServer, name string) int64 {
	t.Helper()
	r := ts.doToken(testAdminToken, "GET", "/metrics", nil)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("%s missing from /metrics", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(v)
}

// TestBudgetOperatorLimits: the operator's defaults fill what a plugin leaves unset or,
// built for ABI version 1, does not know; its maxima cap what a plugin asks.
func TestBudgetOperatorLimits(t *testing.T) {
	t.Parallel()
	def := actor.Budget{MemoryBytes: 128 << 20, Pids: 100, Network: actor.NetworkNone}
	max := actor.Budget{MemoryBytes: 1 << 30, Pids: 200, CPUMillis: 1500, Network: actor.NetworkLoopback}
	limits := func(c *Config) { c.Defaults, c.Limits = def, max }
	v2 := newTestServer(t, &serverOptions{policyFile: examplePlugin(t, "tiers"), config: limits})
	v1 := newTestServer(t, &serverOptions{policyFile: filepath.Join("..", "plugins", "testdata", "v1", "budget.wasm"), config: limits})
	none := newTestServer(t, &serverOptions{config: limits})
	tests := []struct {
		name    string
		ts      *testServer
		tier    string
		memory  int64
		cpu     int
		network string
	}{
		{name: "v2 narrows", ts: v2, tier: "free", memory: 256 << 20, cpu: 1000, network: "none"},
		{name: "v2 cannot widen past max", ts: v2, tier: "pro", memory: 1 << 30, cpu: 1500, network: "loopback"},
		{name: "v2 no opinion", ts: v2, tier: "other", memory: 128 << 20, cpu: 1000, network: "none"},
		{name: "v1 gets the defaults", ts: v1, tier: "pro", memory: 128 << 20, cpu: 1000, network: "none"},
		{name: "no plugin", ts: none, memory: 128 << 20, cpu: 1000, network: "none"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb sandboxJSON
			tt.ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "op" + strconv.Itoa(i), "labels": map[string]string{"tier": tt.tier}}).json(t, &sb)
			b := sb.Budget
			if b.MemoryBytes != tt.memory || b.CPUMillis != tt.cpu || b.Network != tt.network || b.Pids != 100 || b.DiskBytes != 1<<30 {
				t.Fatalf("budget %+v, want memory %d, cpu %d, network %s, pids 100, disk 1 GiB", b, tt.memory, tt.cpu, tt.network)
			}
		})
	}
}

// TestBudgetDefaultAboveMax: a default above its maximum stops the server at start.
func TestBudgetDefaultAboveMax(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), &Config{
		DataDir: t.TempDir(), Defaults: actor.Budget{Pids: 500}, Limits: actor.Budget{Pids: 100},
	})
	if err == nil || !strings.Contains(err.Error(), "pids") {
		t.Fatalf("err = %v, want a start-up error naming pids", err)
	}
}

// TestUsageGoneWhenHibernated: a sandbox shows usage while it runs and none once it
// hibernated (its idle TTL passed), in its object and in the list, though it is still
// in memory.
func TestUsageGoneWhenHibernated(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{limits: actor.Budget{IdleTTL: time.Second}})
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "uh"})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/uh/exec", map[string]any{"argv": []string{"true"}})
	var sb sandboxJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/uh", nil).json(t, &sb)
	if sb.State != "running" || sb.Usage == nil {
		t.Fatalf("running sandbox: state %s, usage %+v; want usage", sb.State, sb.Usage)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/uh", nil)
		r.json(t, &sb)
		if sb.State == "hibernated" {
			if strings.Contains(string(r.body), `"usage"`) {
				t.Fatalf("hibernated sandbox shown with usage: %s", r.body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not hibernated 30 s after its 1 s idle TTL: %s", r.body)
		}
		time.Sleep(50 * time.Millisecond) // the idle TTL passes on the real clock
	}
	if r := ts.must(http.StatusOK, "GET", "/v1/sandboxes", nil); strings.Contains(string(r.body), `"usage"`) {
		t.Fatalf("hibernated sandbox listed with usage: %s", r.body)
	}
}
