package gateway

import (
	"context"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/plugins"
)

// pluginPolicy adapts a Wasm policy host to the gateway's RoutePolicy and the actor's
// budget Policy. The host applies deadlines, failure policies and clamping itself; this
// type only translates between the packages' types.
type pluginPolicy struct {
	host *plugins.Host
}

var (
	_ RoutePolicy  = pluginPolicy{}
	_ actor.Policy = pluginPolicy{}
)

// Route asks the plugin's route hook. A failure is already turned into a decision by the
// host's failure policy (fail closed: 503), so the error only matters for logging.
func (p pluginPolicy) Route(ctx context.Context, r RouteRequest) RouteDecision {
	d, _ := p.host.Route(ctx, &plugins.RouteRequest{
		Tenant: r.Tenant, Method: r.Method, Route: r.Route, SandboxID: r.Sandbox,
		Labels: r.Labels, Command: r.Command,
	})
	return RouteDecision{Allow: d.Allow, Status: d.HTTPStatus(), Reason: d.Reason, Pool: d.Pool}
}

// Budget asks the plugin's budget hook; the host falls back to the operator's defaults
// when the plugin fails, and clamps every answer to the operator's maxima.
func (p pluginPolicy) Budget(ctx context.Context, r actor.BudgetRequest) (actor.Budget, error) {
	b, err := p.host.Budget(ctx, &plugins.BudgetRequest{Tenant: r.Tenant, SandboxID: r.SandboxID, Labels: r.Labels})
	if err != nil {
		return actor.Budget{}, err
	}
	return fromPluginBudget(b), nil
}

func fromPluginBudget(b plugins.Budget) actor.Budget {
	return actor.Budget{
		// A plugin's huge value is the longest (then clamped to the operator's
		// maximum), not one that wrapped around to a tiny or negative duration.
		IdleTTL:           msDuration(b.IdleTTLMS),
		MaxDuration:       msDuration(b.MaxDurationMS),
		MaxProcesses:      int(b.MaxProcesses),
		MaxExecTimeout:    msDuration(b.MaxExecTimeoutMS),
		OutputBufferBytes: int(b.OutputBufferBytes),
		MemoryBytes:       b.MemoryBytes,
		Pids:              int(b.Pids),
		CPUMillis:         int(b.CPUMillis),
		DiskBytes:         b.DiskBytes,
		Network:           actor.Network(b.Network),
	}
}

func toPluginBudget(b actor.Budget) plugins.Budget {
	return plugins.Budget{
		IdleTTLMS: b.IdleTTL.Milliseconds(), MaxDurationMS: b.MaxDuration.Milliseconds(),
		MaxProcesses: int64(b.MaxProcesses), MaxExecTimeoutMS: b.MaxExecTimeout.Milliseconds(),
		OutputBufferBytes: int64(b.OutputBufferBytes), MemoryBytes: b.MemoryBytes, Pids: int64(b.Pids),
		CPUMillis: int64(b.CPUMillis), DiskBytes: b.DiskBytes, Network: plugins.Network(b.Network),
	}
}
