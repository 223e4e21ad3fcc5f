package plugins_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/plugins"
)

var ctx = context.Background()

func TestBuiltinPolicy(t *testing.T) {
	t.Parallel()
	h := newHost(t, "", nil)
	d, err := h.Route(ctx, &plugins.RouteRequest{Method: "GET"})
	if err != nil || !d.Allow || d.HTTPStatus() != 200 || d.Code() != "" {
		t.Fatalf("route: %+v, %v", d, err)
	}
	b, err := h.Budget(ctx, &plugins.BudgetRequest{SandboxID: "x"})
	if want := plugins.DefaultConfig().DefaultBudget; err != nil || b != want {
		t.Fatalf("budget: %+v, %v; want %+v", b, err, want)
	}
}

func TestEchoRoute(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "echo"), nil)
	tests := []struct {
		name string
		req  plugins.RouteRequest
		want plugins.Decision
	}{
		{name: "allow", req: plugins.RouteRequest{Tenant: "a", Method: "GET", Route: "GET /v1/sandboxes"},
			want: plugins.Decision{Allow: true}},
		{name: "deny", req: plugins.RouteRequest{Route: "POST /v1/sandboxes/{sb}/exec", Command: []string{"sh", "deny"}},
			want: plugins.Decision{Status: 403, Reason: "command says deny"}},
		{name: "pool at create", req: plugins.RouteRequest{Route: "POST /v1/sandboxes", Labels: map[string]string{"pool": "gpu"}},
			want: plugins.Decision{Allow: true, Pool: map[string]string{"pool": "gpu"}}},
		{name: "no pool elsewhere", req: plugins.RouteRequest{Route: "GET /v1/sandboxes/{sb}", Labels: map[string]string{"pool": "gpu"}},
			want: plugins.Decision{Allow: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := h.Route(ctx, &tt.req)
			if err != nil || !reflect.DeepEqual(d, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", d, err, tt.want)
			}
		})
	}
}

// TestRoutePoolOverLimits: a pool past the bounds of a sandbox's labels is stored
// nowhere; the plugin has failed, and the route hook's failure policy answers.
func TestRoutePoolOverLimits(t *testing.T) {
	t.Parallel()
	long := map[string]string{"pool": strings.Repeat("g", plugins.MaxPoolValueBytes+1)}
	req := plugins.RouteRequest{Route: "POST /v1/sandboxes", Labels: long}
	for _, failOpen := range []bool{false, true} {
		h := newHost(t, plugin(t, "echo"), func(c *plugins.Config) { c.RouteFailOpen = failOpen })
		d, err := h.Route(ctx, &req)
		if !errors.Is(err, plugins.ErrGarbage) {
			t.Fatalf("fail open %v: error %v, want ErrGarbage", failOpen, err)
		}
		want := plugins.Decision{Status: 503, Reason: "policy plugin unavailable"}
		if failOpen {
			want = plugins.Decision{Allow: true}
		}
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("fail open %v: %+v, want %+v", failOpen, d, want)
		}
	}
	at := map[string]string{"pool": strings.Repeat("g", plugins.MaxPoolValueBytes)}
	d, err := newHost(t, plugin(t, "echo"), nil).Route(ctx, &plugins.RouteRequest{Route: "POST /v1/sandboxes", Labels: at})
	if err != nil || !reflect.DeepEqual(d.Pool, at) {
		t.Fatalf("a pool at the limits: %+v, %v; want it kept", d, err)
	}
}

func TestEchoBudgetIsClamped(t *testing.T) {
	t.Parallel()
	def := plugins.Budget{IdleTTLMS: 1000, MaxDurationMS: 2000, MaxProcesses: 8, MaxExecTimeoutMS: 3000, OutputBufferBytes: 4096,
		MemoryBytes: 1 << 20, Pids: 10, CPUMillis: 100, DiskBytes: 1 << 24, Network: plugins.NetworkNone}
	max := def
	max.MaxProcesses = 16
	h := newHost(t, plugin(t, "echo"), func(c *plugins.Config) { c.DefaultBudget, c.MaxBudget = def, max })
	tests := []struct {
		name  string
		procs string
		want  int64
	}{
		{name: "no opinion", procs: "", want: 8},
		{name: "narrower", procs: "2", want: 2},
		{name: "between default and max", procs: "12", want: 12},
		{name: "wider than max", procs: "1000000", want: 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := h.Budget(ctx, &plugins.BudgetRequest{Labels: map[string]string{"procs": tt.procs}})
			want := def
			want.MaxProcesses = tt.want
			if err != nil || b != want {
				t.Fatalf("got %+v, %v; want %+v", b, err, want)
			}
		})
	}
}

func TestEchoRateLimitUsesHostCounters(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "echo"), func(c *plugins.Config) { c.PluginConfig = []byte{3} })
	for i := range 5 {
		d, err := h.Route(ctx, &plugins.RouteRequest{Tenant: "rl"})
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; d.Allow != want {
			t.Fatalf("call %d: allow=%v, want %v", i, d.Allow, want)
		}
		if !d.Allow && (d.HTTPStatus() != 429 || d.Code() != "budget_exceeded") {
			t.Fatalf("call %d: %+v", i, d)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		conf []byte
		want error
	}{
		{name: "missing file", path: filepath.Join(dir, "nope.wasm"), want: os.ErrNotExist},
		{name: "not wasm", path: write("junk.wasm", []byte("not wasm at all")), want: plugins.ErrInvalidModule},
		{name: "no exports", path: write("empty.wasm", []byte("\x00asm\x01\x00\x00\x00")), want: plugins.ErrInvalidModule},
		{name: "init fails", path: plugin(t, "echo"), conf: []byte("fail"), want: plugins.ErrInvalidModule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := plugins.New(ctx, &plugins.Config{Path: tt.path, CacheDir: cacheDir, PluginConfig: tt.conf, PollInterval: -1, Logger: quiet, PoolSize: 1})
			if err == nil {
				_ = h.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	_, err := plugins.New(ctx, &plugins.Config{Path: plugin(t, "echo"), CacheDir: cacheDir, PluginConfig: []byte("fail"), PollInterval: -1, Logger: quiet, PoolSize: 1})
	var ie *plugins.InitError
	if !errors.As(err, &ie) || ie.Message != "config says fail" {
		t.Fatalf("got %v, want InitError with the guest's message", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  plugins.Config
	}{
		{name: "negative pool", cfg: plugins.Config{PoolSize: -1}},
		{name: "tiny memory", cfg: plugins.Config{MemoryLimitBytes: 100}},
		{name: "default above max", cfg: plugins.Config{MaxBudget: plugins.Budget{MaxProcesses: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := plugins.New(ctx, &tt.cfg); !errors.Is(err, plugins.ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestCloseIsIdempotentAndFailsClosed(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "echo"), nil)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := h.Route(ctx, &plugins.RouteRequest{})
	if !errors.Is(err, plugins.ErrClosed) || d.Allow || d.HTTPStatus() != 503 {
		t.Fatalf("route after close: %+v, %v", d, err)
	}
	b, err := h.Budget(ctx, &plugins.BudgetRequest{})
	if !errors.Is(err, plugins.ErrClosed) || b != plugins.DefaultConfig().DefaultBudget {
		t.Fatalf("budget after close: %+v, %v", b, err)
	}
	if s := h.Stats(); s.RuntimesOpened != 1 || s.RuntimesClosed != 1 {
		t.Fatalf("runtimes opened %d closed %d", s.RuntimesOpened, s.RuntimesClosed)
	}
}

func TestRecycleAfterCalls(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "echo"), func(c *plugins.Config) { c.PoolSize = 1; c.RecycleAfterCalls = 3 })
	for range 9 {
		if d, err := h.Route(ctx, &plugins.RouteRequest{}); err != nil || !d.Allow {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if s := h.Stats(); s.InstancesRecycled != 3 || s.InstancesDiscarded != 0 {
		t.Fatalf("recycled %d discarded %d, want 3 and 0", s.InstancesRecycled, s.InstancesDiscarded)
	}
}
