// Package pools holds an example policy plugin written in WebAssembly text (pools.wat)
// and its committed build (pools.wasm); this test drives it through the Host.
package pools

import (
	"context"
	"errors"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/plugins/pluginstest"
)

func TestPools(t *testing.T) {
	t.Parallel()
	h, err := plugins.New(context.Background(), &plugins.Config{
		Path: "pools.wasm", PollInterval: -1, PoolSize: 2, CallTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	b, err := h.Budget(context.Background(), &plugins.BudgetRequest{Labels: map[string]string{"pool": "gpu"}})
	if err != nil || b != plugins.DefaultConfig().DefaultBudget {
		t.Fatalf("budget: %+v, %v; want the operator's defaults", b, err)
	}
	t.Cleanup(func() { // runs after the parallel subtests, before Close
		if s := h.Stats(); s.InstancesDiscarded != 0 || s.Route.Failures() != 0 || s.Route.Calls != 5 {
			t.Errorf("stats %+v", s)
		}
	})
	const create = "POST /v1/sandboxes"
	tests := []struct {
		name   string
		route  string
		labels map[string]string
		pool   map[string]string
	}{
		{name: "create in pool", route: create, labels: map[string]string{"pool": "gpu", "tier": "pro"}, pool: map[string]string{"pool": "gpu"}},
		{name: "create without pool label", route: create, labels: map[string]string{"tier": "pro"}},
		{name: "create, no labels", route: create},
		{name: "long pool name", route: create, labels: map[string]string{"pool": string(make([]byte, 300))}, pool: map[string]string{"pool": string(make([]byte, 300))}},
		{name: "not a create", route: "POST /v1/sandboxes/{sb}/exec", labels: map[string]string{"pool": "gpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := h.Route(context.Background(), &plugins.RouteRequest{
				Tenant: "acme", Method: "POST", Route: tt.route, SandboxID: "sb1", Labels: tt.labels,
				Command: []string{"ignored"},
			})
			if err != nil || !d.Allow || !maps.Equal(d.Pool, tt.pool) {
				t.Fatalf("got %+v, %v; want allow in %v", d, err, tt.pool)
			}
		})
	}
}

// TestCommittedBinaryIsFresh checks pools.wasm against a fresh build of pools.wat. It
// needs wabt's wat2wasm (make plugins installs nothing; .ci/run installs wabt).
func TestCommittedBinaryIsFresh(t *testing.T) {
	t.Parallel()
	b, err := pluginstest.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fresh, err := b.Wat("pools.wat")
	if errors.Is(err, pluginstest.ErrNoTool) {
		if os.Getenv("CI") != "" {
			t.Fatal("wat2wasm missing on CI")
		}
		t.Skip("wat2wasm not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	same, err := pluginstest.SameFile(fresh, "pools.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Fatal("pools.wasm is stale: run `wat2wasm -o pools.wasm pools.wat` in examples/plugins/pools")
	}
}
