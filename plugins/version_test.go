package plugins_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/plugins/internal/wire"
	"github.com/sandgate/sandgate/plugins/pluginstest"
)

// versionBudgets are the operator's budgets of the ABI version tests: every field set,
// the maxima wider than the defaults.
var (
	versionDef = plugins.Budget{IdleTTLMS: 1000, MaxDurationMS: 2000, MaxProcesses: 8, MaxExecTimeoutMS: 3000, OutputBufferBytes: 4096,
		MemoryBytes: 64 << 20, Pids: 32, CPUMillis: 500, DiskBytes: 1 << 28, Network: plugins.NetworkNone}
	versionMax = plugins.Budget{IdleTTLMS: 1000, MaxDurationMS: 2000, MaxProcesses: 1 << 20, MaxExecTimeoutMS: 3000, OutputBufferBytes: 4096,
		MemoryBytes: 256 << 20, Pids: 64, CPUMillis: 2000, DiskBytes: 1 << 30, Network: plugins.NetworkLoopback}
)

// A module of ABI version 1 keeps working: the host sends it the version 1 request (it
// answers with the length it got), reads its version 1 answer, and the fields version 1
// does not have take the operator's defaults.
func TestABIVersion1Budget(t *testing.T) {
	t.Parallel()
	h := newHost(t, filepath.Join("testdata", "v1", "budget.wasm"), func(c *plugins.Config) {
		c.DefaultBudget, c.MaxBudget = versionDef, versionMax
	})
	req := plugins.BudgetRequest{Tenant: "acme", SandboxID: "sb1", Labels: map[string]string{"tier": "free"}}
	b, err := h.Budget(ctx, &req)
	if err != nil {
		t.Fatal(err)
	}
	v1len := len(wire.AppendBudgetRequestV(nil, &wire.BudgetRequest{
		Tenant: req.Tenant, SandboxID: req.SandboxID, Labels: req.Labels,
		Defaults: wire.Budget{IdleTTLMS: 1000, MaxDurationMS: 2000, MaxProcesses: 8, MaxExecTimeoutMS: 3000, OutputBufferBytes: 4096},
		Max:      wire.Budget{IdleTTLMS: 1000, MaxDurationMS: 2000, MaxProcesses: 1 << 20, MaxExecTimeoutMS: 3000, OutputBufferBytes: 4096},
	}, 1))
	want := versionDef
	want.MaxProcesses = int64(v1len)
	if b != want {
		t.Fatalf("budget %+v, want %+v (max_processes: the length of a version 1 request)", b, want)
	}
	if s := h.Stats(); s.Budget.Failures() != 0 {
		t.Fatalf("failures: %+v", s.Budget)
	}
}

// A module of ABI version 2 narrows the new fields, and cannot widen them past the
// operator's maxima.
func TestABIVersion2Budget(t *testing.T) {
	t.Parallel()
	h := newHost(t, plugin(t, "echo"), func(c *plugins.Config) { c.DefaultBudget, c.MaxBudget = versionDef, versionMax })
	tests := []struct {
		name    string
		labels  map[string]string
		memory  int64
		network plugins.Network
	}{
		{name: "no opinion", labels: nil, memory: 64 << 20, network: plugins.NetworkNone},
		{name: "narrower", labels: map[string]string{"memory": "1048576", "network": "none"}, memory: 1 << 20, network: plugins.NetworkNone},
		{name: "between default and max", labels: map[string]string{"memory": "134217728", "network": "loopback"}, memory: 128 << 20, network: plugins.NetworkLoopback},
		{name: "wider than max", labels: map[string]string{"memory": "1099511627776", "network": "host"}, memory: 256 << 20, network: plugins.NetworkLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := h.Budget(ctx, &plugins.BudgetRequest{Labels: tt.labels})
			want := versionDef
			want.MemoryBytes, want.Network = tt.memory, tt.network
			if err != nil || b != want {
				t.Fatalf("got %+v, %v; want %+v", b, err, want)
			}
		})
	}
}

// TestABIVersionRange: versions 1 and 2 load (the tests above); 0 and 3 are refused.
// The modules are testdata/v1/budget.wasm with the constant its sandgate_abi_version
// returns patched: that function is the module's first code body, "i32.const 1; end".
func TestABIVersionRange(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "v1", "budget.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte{0x41, 0x01, 0x0b} // i32.const 1, end
	at := bytes.Index(src, body)
	if at < 0 || bytes.Contains(src[at+1:], body) {
		t.Fatal("cannot find the version constant in budget.wasm exactly once")
	}
	for _, v := range []byte{0, 3} {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) {
			t.Parallel()
			mod := bytes.Clone(src)
			mod[at+1] = v
			path := filepath.Join(t.TempDir(), "v.wasm")
			if err := os.WriteFile(path, mod, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := plugins.New(ctx, &plugins.Config{Path: path, PollInterval: -1, Logger: quiet})
			if !errors.Is(err, plugins.ErrInvalidModule) || !strings.Contains(err.Error(), "ABI version") {
				t.Fatalf("version %d: err %v, want ErrInvalidModule naming the ABI version", v, err)
			}
		})
	}
}

// TestV1BinaryIsFresh checks testdata/v1/budget.wasm against a fresh build of its .wat.
func TestV1BinaryIsFresh(t *testing.T) {
	t.Parallel()
	b, err := pluginstest.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	fresh, err := b.Wat(filepath.Join("testdata", "v1", "budget.wat"))
	if errors.Is(err, pluginstest.ErrNoTool) {
		if os.Getenv("CI") != "" {
			t.Fatal("wat2wasm missing on CI")
		}
		t.Skip("wat2wasm not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	if same, err := pluginstest.SameFile(fresh, filepath.Join("testdata", "v1", "budget.wasm")); err != nil || !same {
		t.Fatalf("testdata/v1/budget.wasm is stale (%v): run `wat2wasm -o budget.wasm budget.wat` there", err)
	}
}
