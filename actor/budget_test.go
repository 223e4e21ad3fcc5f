package actor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

type policyFunc func(context.Context, BudgetRequest) (Budget, error)

func (f policyFunc) Budget(ctx context.Context, r BudgetRequest) (Budget, error) { return f(ctx, r) }

func TestBudgetDecide(t *testing.T) {
	t.Parallel()
	limits := Budget{IdleTTL: time.Hour, MaxDuration: 10 * time.Hour, MaxProcesses: 8, MaxExecTimeout: time.Minute, OutputBufferBytes: 4096,
		MemoryBytes: 1 << 30, Pids: 100, CPUMillis: 2000, DiskBytes: 1 << 32, Network: NetworkLoopback}
	defaults := Budget{IdleTTL: time.Minute, MaxDuration: time.Hour, MaxProcesses: 4, MaxExecTimeout: time.Second, OutputBufferBytes: 1024,
		MemoryBytes: 1 << 20, Pids: 10, CPUMillis: 500, DiskBytes: 1 << 24, Network: NetworkNone}
	tests := []struct {
		name string
		in   Budget
		want Budget
	}{
		{name: "zero takes defaults", in: Budget{}, want: defaults},
		{name: "narrower kept", in: Budget{IdleTTL: time.Second, MaxProcesses: 2, OutputBufferBytes: 10, MemoryBytes: 1 << 10, Pids: 3, Network: NetworkNone},
			want: Budget{IdleTTL: time.Second, MaxDuration: time.Hour, MaxProcesses: 2, MaxExecTimeout: time.Second, OutputBufferBytes: 10,
				MemoryBytes: 1 << 10, Pids: 3, CPUMillis: 500, DiskBytes: 1 << 24, Network: NetworkNone}},
		{name: "wider clamped", in: Budget{IdleTTL: 99 * time.Hour, MaxDuration: 99 * time.Hour, MaxProcesses: 1000, MaxExecTimeout: time.Hour,
			OutputBufferBytes: 1 << 30, MemoryBytes: 1 << 40, Pids: 1 << 20, CPUMillis: 64000, DiskBytes: 1 << 50, Network: NetworkHost},
			want: limits},
		{name: "between default and max kept", in: Budget{MemoryBytes: 1 << 25, Network: NetworkLoopback},
			want: func() Budget { b := defaults; b.MemoryBytes, b.Network = 1<<25, NetworkLoopback; return b }()},
		{name: "negative and unknown are unset", in: Budget{MaxProcesses: -1, IdleTTL: -time.Second, MemoryBytes: -5, Network: "wan"}, want: defaults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.decide(defaults, limits); got != tc.want {
				t.Fatalf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOperatorBudgets(t *testing.T) {
	t.Parallel()
	def := DefaultBudget()
	with := func(b Budget, f func(*Budget)) Budget { f(&b); return b }
	tests := []struct {
		name             string
		defaults, max    Budget
		wantDef, wantMax Budget
		wantErr          string // a substring of the error; "" for none
	}{
		{name: "nothing set", wantDef: def, wantMax: def},
		{name: "max narrows the built-in default", max: Budget{MemoryBytes: 1 << 20, Network: NetworkNone},
			wantDef: with(def, func(b *Budget) { b.MemoryBytes, b.Network = 1<<20, NetworkNone }),
			wantMax: with(def, func(b *Budget) { b.MemoryBytes, b.Network = 1<<20, NetworkNone })},
		{name: "default alone is also the max", defaults: Budget{Pids: 1000, Network: NetworkHost},
			wantDef: with(def, func(b *Budget) { b.Pids, b.Network = 1000, NetworkHost }),
			wantMax: with(def, func(b *Budget) { b.Pids, b.Network = 1000, NetworkHost })},
		{name: "both", defaults: Budget{CPUMillis: 500}, max: Budget{CPUMillis: 4000, Network: NetworkHost},
			wantDef: with(def, func(b *Budget) { b.CPUMillis = 500 }),
			wantMax: with(def, func(b *Budget) { b.CPUMillis, b.Network = 4000, NetworkHost })},
		{name: "default above max", defaults: Budget{DiskBytes: 2 << 30}, max: Budget{DiskBytes: 1 << 30}, wantErr: "disk_bytes"},
		{name: "network above max", defaults: Budget{Network: NetworkHost}, max: Budget{Network: NetworkLoopback}, wantErr: "network"},
		{name: "negative", max: Budget{Pids: -1}, wantErr: "pids"},
		{name: "unknown network", defaults: Budget{Network: "wan"}, wantErr: "wan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, m, err := OperatorBudgets(tc.defaults, tc.max)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalid naming %q", err, tc.wantErr)
				}
				return
			}
			must(t, err)
			if d != tc.wantDef || m != tc.wantMax {
				t.Fatalf("got\n default %+v\n max     %+v\nwant\n default %+v\n max     %+v", d, m, tc.wantDef, tc.wantMax)
			}
		})
	}
}

// A policy that knows nothing of the isolation fields gets the operator's defaults for
// them; one that asks for more than the maxima is narrowed; the runtime is configured
// from the result.
func TestPolicyIsolationFields(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Defaults = Budget{MemoryBytes: 64 << 20, Pids: 32, CPUMillis: 250, DiskBytes: 1 << 28, Network: NetworkNone}
		c.Limits = Budget{MemoryBytes: 128 << 20, Pids: 64, CPUMillis: 500, DiskBytes: 1 << 29, Network: NetworkLoopback}
		c.Policy = policyFunc(func(_ context.Context, r BudgetRequest) (Budget, error) {
			if r.SandboxID == "wide" {
				return Budget{MemoryBytes: 1 << 40, Pids: 1 << 20, CPUMillis: 8000, DiskBytes: 1 << 40, Network: NetworkHost}, nil
			}
			return Budget{MaxProcesses: 3}, nil
		})
	})
	old, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "old"})
	must(t, err)
	b := old.Budget
	if b.MaxProcesses != 3 || b.MemoryBytes != 64<<20 || b.Pids != 32 || b.CPUMillis != 250 || b.DiskBytes != 1<<28 || b.Network != NetworkNone {
		t.Fatalf("budget of a policy without the new fields: %+v", b)
	}
	wide, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "wide"})
	must(t, err)
	b = wide.Budget
	if b.MemoryBytes != 128<<20 || b.Pids != 64 || b.CPUMillis != 500 || b.DiskBytes != 1<<29 || b.Network != NetworkLoopback {
		t.Fatalf("budget of a policy asking past the maxima: %+v", b)
	}
	cfg, err := call(tctx(t), n.Node, "wide", func(a *sbActor) (runtime.Config, error) { return a.runtimeConfig(), nil })
	must(t, err)
	if cfg.MemoryBytes != 128<<20 || cfg.Pids != 64 || cfg.CPUMillis != 500 {
		t.Fatalf("runtime config %+v does not carry the budget", cfg)
	}
}

// A record saved before the isolation fields existed shows the operator's defaults.
func TestRecordWithoutIsolationFields(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Defaults = Budget{Pids: 7, Network: NetworkNone} })
	var rec budgetRec
	must(t, json.Unmarshal([]byte(`{"idle_ttl_ms":60000,"max_duration_ms":3600000,"max_processes":2,"max_exec_timeout_ms":1000,"output_buffer_bytes":100}`), &rec))
	b := n.recBudget(rec)
	want := DefaultBudget()
	want.IdleTTL, want.MaxDuration, want.MaxProcesses, want.MaxExecTimeout, want.OutputBufferBytes = time.Minute, time.Hour, 2, time.Second, 100
	want.Pids, want.Network = 7, NetworkNone
	if b != want {
		t.Fatalf("budget %+v, want %+v", b, want)
	}
}

func TestPolicyUsedAndClamped(t *testing.T) {
	t.Parallel()
	var seen BudgetRequest
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{MaxProcesses: 10}
		c.Policy = policyFunc(func(_ context.Context, r BudgetRequest) (Budget, error) {
			seen = r // called on the actor goroutine; read below after the call returned
			if r.Labels["tier"] == "deny" {
				return Budget{}, errors.New("no budget for you")
			}
			return Budget{MaxProcesses: 50, IdleTTL: time.Minute}, nil
		})
	})
	in, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "pol", Tenant: "acme", Labels: map[string]string{"tier": "free"}})
	must(t, err)
	if in.Budget.MaxProcesses != 10 || in.Budget.IdleTTL != time.Minute || in.Budget.MaxDuration != DefaultBudget().MaxDuration {
		t.Fatalf("budget %+v", in.Budget)
	}
	if seen.Tenant != "acme" || seen.SandboxID != "pol" || seen.Labels["tier"] != "free" {
		t.Fatalf("policy saw %+v", seen)
	}
	// A policy that fails gives the operator's defaults (clamped as any budget): it
	// must not stop sandboxes from being made.
	in, _, err = n.CreateSandbox(tctx(t), SandboxSpec{ID: "pol2", Labels: map[string]string{"tier": "deny"}})
	must(t, err)
	want := DefaultBudget()
	want.MaxProcesses = 10
	if in.Budget != want {
		t.Fatalf("budget after a policy error %+v, want the defaults %+v", in.Budget, want)
	}
}

// Exec calls in flight and live session shells count in the process budget: with
// MaxProcesses 2, a session shell and a running exec leave no room for a process, a
// terminal, another exec or another session.
func TestExecAndSessionsCountAsProcesses(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Limits = Budget{MaxProcesses: 2} })
	mustCreate(t, n, "sb")
	ctx := tctx(t)
	_, _, err := n.CreateSession(ctx, "sb", SessionSpec{ID: "s1"})
	must(t, err)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "release")
	must(t, syscall.Mkfifo(fifo, 0o600))
	execDone := make(chan error, 1)
	go func() {
		_, err := n.Exec(ctx, "sb", runtime.ExecOptions{Argv: []string{"cat", fifo}})
		execDone <- err
	}()
	// The exec is running once the fifo has a reader: opening it for writing waits for that.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)

	var budget *BudgetError
	if _, err := n.StartProcess(ctx, "sb", runtime.StartOptions{Command: "sleep 60"}); !errors.As(err, &budget) {
		t.Fatalf("StartProcess at the budget: err = %v, want a *BudgetError", err)
	}
	if _, err := n.Exec(ctx, "sb", runtime.ExecOptions{Command: "true"}); !errors.As(err, &budget) {
		t.Fatalf("Exec at the budget: err = %v, want a *BudgetError", err)
	}
	if _, _, err := n.CreateSession(ctx, "sb", SessionSpec{ID: "s2"}); !errors.As(err, &budget) {
		t.Fatalf("CreateSession at the budget: err = %v, want a *BudgetError", err)
	}
	if _, _, err := n.PutTerminal(ctx, "sb", "t1", TerminalSpec{}); !errors.As(err, &budget) {
		t.Fatalf("PutTerminal at the budget: err = %v, want a *BudgetError", err)
	}

	must(t, w.Close()) // the exec ends: room for one again
	must(t, <-execDone)
	res, err := n.Exec(ctx, "sb", runtime.ExecOptions{Command: "echo ok"})
	must(t, err)
	if string(res.Stdout) != "ok\n" {
		t.Fatalf("exec after the first ended: stdout %q", res.Stdout)
	}
}
