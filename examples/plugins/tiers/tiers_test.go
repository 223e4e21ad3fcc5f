package main

import (
	"context"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/plugins/pluginstest"
)

var wasm string

func TestMain(m *testing.M) { pluginstest.RunWithPlugin(m, ".", &wasm) }

func TestTiers(t *testing.T) {
	t.Parallel()
	def := plugins.Budget{IdleTTLMS: 900000, MaxDurationMS: 86400000, MaxProcesses: 8, MaxExecTimeoutMS: 60000, OutputBufferBytes: 1 << 20,
		MemoryBytes: 512 << 20, Pids: 256, CPUMillis: 1000, DiskBytes: 1 << 30, Network: plugins.NetworkLoopback}
	max := plugins.Budget{IdleTTLMS: 900000, MaxDurationMS: 86400000, MaxProcesses: 64, MaxExecTimeoutMS: 600000, OutputBufferBytes: 1 << 20,
		MemoryBytes: 2 << 30, Pids: 256, CPUMillis: 4000, DiskBytes: 1 << 30, Network: plugins.NetworkHost}
	with := func(b plugins.Budget, f func(*plugins.Budget)) plugins.Budget { f(&b); return b }
	tests := []struct {
		name string
		max  plugins.Budget
		tier string
		want plugins.Budget
	}{
		{name: "free", max: max, tier: "free", want: with(def, func(b *plugins.Budget) {
			b.IdleTTLMS, b.MaxProcesses, b.MaxExecTimeoutMS, b.MemoryBytes, b.Network = 60000, 2, 5000, 256<<20, plugins.NetworkNone
		})},
		{name: "pro", max: max, tier: "pro", want: with(def, func(b *plugins.Budget) {
			// 4 GiB asked, 2 GiB allowed.
			b.MaxProcesses, b.MaxExecTimeoutMS, b.MemoryBytes, b.CPUMillis, b.Network = 32, 600000, 2<<30, 2000, plugins.NetworkHost
		})},
		{name: "pro clamped by the operator", max: def, tier: "pro", want: def},
		{name: "no tier", max: max, tier: "", want: def},
		{name: "unknown tier", max: max, tier: "gold", want: def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := plugins.New(context.Background(), &plugins.Config{
				Path: wasm, CacheDir: pluginstest.CacheDir(), PollInterval: -1, PoolSize: 1,
				CallTimeout: 5 * time.Second, DefaultBudget: def, MaxBudget: tt.max,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			got, err := h.Budget(context.Background(), &plugins.BudgetRequest{
				Tenant: "acme", SandboxID: "sb1", Labels: map[string]string{"tier": tt.tier},
			})
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			// tiers has no route hook: everything is allowed.
			if d, err := h.Route(context.Background(), &plugins.RouteRequest{Route: "POST /v1/sandboxes"}); err != nil || !d.Allow {
				t.Fatalf("route: %+v, %v", d, err)
			}
		})
	}
}
