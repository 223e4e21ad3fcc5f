package actor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

type policyFunc func(context.Context, BudgetRequest) (Budget, error)

func (f policyFunc) Budget(ctx context.Context, r BudgetRequest) (Budget, error) { return f(ctx, r) }

func TestBudgetClamp(t *testing.T) {
	t.Parallel()
	limits := Budget{IdleTTL: time.Hour, MaxDuration: 10 * time.Hour, MaxProcesses: 8, MaxExecTimeout: time.Minute, OutputBufferBytes: 4096}
	tests := []struct {
		name string
		in   Budget
		want Budget
	}{
		{name: "zero takes limits", in: Budget{}, want: limits},
		{name: "narrower kept", in: Budget{IdleTTL: time.Minute, MaxProcesses: 2, OutputBufferBytes: 10},
			want: Budget{IdleTTL: time.Minute, MaxDuration: 10 * time.Hour, MaxProcesses: 2, MaxExecTimeout: time.Minute, OutputBufferBytes: 10}},
		{name: "wider clamped", in: Budget{IdleTTL: 99 * time.Hour, MaxDuration: 99 * time.Hour, MaxProcesses: 1000, MaxExecTimeout: time.Hour, OutputBufferBytes: 1 << 30},
			want: limits},
		{name: "negative is unset", in: Budget{MaxProcesses: -1, IdleTTL: -time.Second}, want: limits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.clamp(limits); got != tc.want {
				t.Fatalf("clamp = %+v, want %+v", got, tc.want)
			}
		})
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
	_, _, err = n.CreateSandbox(tctx(t), SandboxSpec{ID: "pol2", Labels: map[string]string{"tier": "deny"}})
	if err == nil {
		t.Fatal("policy error ignored")
	}
	_, err = n.GetSandbox(tctx(t), "pol2")
	wantErr(t, err, ErrNotFound)
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
