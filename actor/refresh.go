package actor

import (
	"context"
	"fmt"
	"maps"
)

// RefreshBudget asks the policy again for sandbox sb's budget and applies it, clamped to
// the operator's limits (unset fields: the operator's defaults); the gateway calls it for every sandbox after a policy plugin
// reload. New limits hold for new work: processes already running are not ended, and a
// process's output buffer keeps the size it started with. A changed budget is recorded
// with a budget.changed event. It returns the budget now in force.
func (n *Node) RefreshBudget(ctx context.Context, sb string) (Budget, error) {
	if err := checkID("sandbox", sb); err != nil {
		return Budget{}, err
	}
	return call(ctx, n, sb, func(a *sbActor) (Budget, error) {
		if err := a.exists(); err != nil {
			return Budget{}, err
		}
		b, err := a.n.cfg.Policy.Budget(a.ctx(), BudgetRequest{Tenant: a.rec.Tenant, SandboxID: a.id, Labels: maps.Clone(a.rec.Labels)})
		if err != nil {
			return a.rec.Budget.budget(), fmt.Errorf("actor: failed to get budget for sandbox %q: %w", a.id, err)
		}
		next := toBudgetRec(b.decide(a.n.cfg.Defaults, a.n.cfg.Limits))
		if next == a.rec.Budget {
			return next.budget(), nil
		}
		a.rec.Budget = next
		a.saveRec()
		a.emit("budget.changed", next)
		a.rearm() // the idle TTL or max duration may have moved
		a.dirty = true
		return next.budget(), nil
	})
}
