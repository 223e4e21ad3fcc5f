package actor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/sandgate/sandgate/runtime"
)

// switchPolicy answers with whichever budget is current, like a reloaded plugin.
type switchPolicy struct{ procs atomic.Int64 }

func (p *switchPolicy) Budget(context.Context, BudgetRequest) (Budget, error) {
	return Budget{MaxProcesses: int(p.procs.Load())}, nil
}

func TestRefreshBudget(t *testing.T) {
	t.Parallel()
	pol := &switchPolicy{}
	pol.procs.Store(1)
	n := newTestNode(t, func(c *Config) { c.Policy = pol; c.Limits = Budget{MaxProcesses: 3} })
	mustCreate(t, n, "rb")
	start := func() error {
		_, err := n.StartProcess(tctx(t), "rb", runtime.StartOptions{Argv: []string{"sleep", "30"}})
		return err
	}
	must(t, start())
	if err := start(); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("second process under a budget of 1: %v", err)
	}
	// The policy now allows 10; the operator's limit of 3 still holds.
	pol.procs.Store(10)
	b, err := n.RefreshBudget(tctx(t), "rb")
	must(t, err)
	if b.MaxProcesses != 3 {
		t.Fatalf("refreshed budget %+v, want clamped to 3", b)
	}
	must(t, start())
	must(t, start())
	if err := start(); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("fourth process under a budget of 3: %v", err)
	}
	evs, err := n.Events(tctx(t), "rb", 0, 0)
	must(t, err)
	found := false
	for _, e := range evs {
		found = found || e.Type == "budget.changed"
	}
	if !found {
		t.Fatalf("no budget.changed event in %+v", evs)
	}
	if _, err := n.RefreshBudget(tctx(t), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown sandbox: %v", err)
	}
}
