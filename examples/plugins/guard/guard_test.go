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

func newHost(t *testing.T, config string) *plugins.Host {
	t.Helper()
	h, err := plugins.New(context.Background(), &plugins.Config{
		Path: wasm, PluginConfig: []byte(config), CacheDir: pluginstest.CacheDir(),
		PollInterval: -1, PoolSize: 1, CallTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func TestGuard(t *testing.T) {
	t.Parallel()
	const exec = "POST /v1/sandboxes/{sb}/exec"
	tests := []struct {
		name    string
		config  string
		tenant  string
		route   string
		command []string
		reason  string // "" means allowed
	}{
		{name: "harmless", route: exec, command: []string{"ls", "-la"}},
		{name: "mkfs", route: exec, command: []string{"sh", "-c", "mkfs.ext4 /dev/sda"}, reason: "blocked by guard: mkfs"},
		{name: "fork bomb in a session", route: "POST /v1/sandboxes/{sb}/sessions/{s}/exec",
			command: []string{"sh", "-c", ":(){ :|:& };:"}, reason: "blocked by guard: :(){"},
		{name: "process", route: "POST /v1/sandboxes/{sb}/processes", command: []string{"mkfs"}, reason: "blocked by guard: mkfs"},
		{name: "admin may", tenant: "admin", route: exec, command: []string{"mkfs"}},
		{name: "no command", route: "GET /v1/sandboxes/{sb}"},
		{name: "configured list", config: "rm -rf /\ncurl\n", route: exec, command: []string{"curl", "x"}, reason: "blocked by guard: curl"},
		{name: "configured list replaces default", config: "curl\n", route: exec, command: []string{"mkfs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHost(t, tt.config)
			tenant := tt.tenant
			if tenant == "" {
				tenant = "acme"
			}
			d, err := h.Route(context.Background(), &plugins.RouteRequest{
				Tenant: tenant, Method: "POST", Route: tt.route, SandboxID: "sb1", Command: tt.command,
			})
			if err != nil {
				t.Fatal(err)
			}
			if tt.reason == "" {
				if !d.Allow {
					t.Fatalf("denied: %+v", d)
				}
				return
			}
			if d.Allow || d.Reason != tt.reason || d.HTTPStatus() != 403 || d.Code() != "forbidden" {
				t.Fatalf("got %+v, want 403 %q", d, tt.reason)
			}
		})
	}
}
