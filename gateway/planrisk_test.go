package gateway

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// planRisk records what may legitimately turn a planned move off a node into an
// unplanned one on a loaded machine: the node's lease lapsing (it fences every
// activation), or its handoff hook for the moving sandbox outliving the gate's window.
type planRisk struct {
	from     *testServer
	fenced   atomic.Bool
	slowHook atomic.Int64 // nanoseconds of the hook that handled the moving sandbox
}

// watchPlanRisk installs from's fence and handoff hooks, which record a fence and the
// time of the hook for a handoff that moving says carries the sandbox.
func watchPlanRisk(from *testServer, moving func(cluster.Handoff) bool) *planRisk {
	pr := &planRisk{from: from}
	fence := func() { pr.fenced.Store(true); from.srv.fence() }
	from.srv.hooks.onFence.Store(&fence)
	hook := func(ctx context.Context, h cluster.Handoff) {
		began := time.Now()
		from.srv.handOff(ctx, h)
		if moving(h) {
			pr.slowHook.Store(int64(time.Since(began)))
		}
	}
	from.srv.hooks.onHandoff.Store(&hook)
	return pr
}

// took is how long the hook for the moving sandbox ran (0 before it ran).
func (pr *planRisk) took() time.Duration { return time.Duration(pr.slowHook.Load()) }

// window is the gate's window on the node the sandbox moves off.
func (pr *planRisk) window() time.Duration { return pr.from.srv.handoffs.window }

// degraded reports whether the node was fenced or its hook outlived the window.
func (pr *planRisk) degraded() bool { return pr.fenced.Load() || pr.took() >= pr.window() }
