package actor

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestKeptLimits: a sandbox remembers at most Config.SessionLimit sessions and
// Config.TerminalLimit terminals. A new id past the limit is a *BudgetError naming it,
// with a budget.denied event; the ids it has are still served, a dead session is
// still replaced, and deleting one makes room.
func TestKeptLimits(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.SessionLimit, c.TerminalLimit = 2, 2 })
	ctx := tctx(t)
	mustCreate(t, n, "kl")
	kinds := []struct {
		name, budget string
		put          func(id string) error
		del          func(id string) error
	}{
		{
			name: "sessions", budget: "max_sessions",
			put: func(id string) error {
				_, _, err := n.CreateSession(ctx, "kl", SessionSpec{ID: id})
				return err
			},
			del: func(id string) error { return n.DeleteSession(ctx, "kl", id) },
		},
		{
			name: "terminals", budget: "max_terminals",
			put: func(id string) error {
				_, _, err := n.PutTerminal(ctx, "kl", id, TerminalSpec{})
				return err
			},
			del: func(id string) error { return n.DeleteTerminal(ctx, "kl", id) },
		},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			must(t, k.put("a"))
			must(t, k.put("b"))
			err := k.put("c")
			var be *BudgetError
			if !errors.As(err, &be) || be.Budget != k.budget || be.Limit != 2 || !errors.Is(err, ErrBudgetExceeded) {
				t.Fatalf("a third %s = %v, want a *BudgetError for %s, limit 2", k.name, err, k.budget)
			}
			must(t, k.put("a")) // an id it has is served
			must(t, k.del("b"))
			must(t, k.put("c")) // deleting made room
		})
	}
	if types := eventTypes(t, n, "kl"); slices.Index(types, "budget.denied") < 0 {
		t.Fatalf("no budget.denied event in %v", types)
	}

	// A dead session is replaced under its id at the limit.
	_, err := n.SessionExec(ctx, "kl", "a", runtime.SessionCommand{Command: "exit 3"})
	must(t, err)
	eventually(t, 10*time.Second, "session dead", func() bool {
		in, err := n.GetSession(ctx, "kl", "a")
		return err == nil && in.Status == "dead"
	})
	_, created, err := n.CreateSession(ctx, "kl", SessionSpec{ID: "a"})
	if err != nil || !created {
		t.Fatalf("replacing a dead session at the limit: created %v, %v", created, err)
	}
}
