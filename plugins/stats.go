package plugins

import (
	"errors"
	"sync/atomic"
)

// Stats is a snapshot of a Host's counters; every count is since [New].
type Stats struct {
	Generation         uint64    // modules put in service (0: none, built-in policy)
	Route, Budget      HookStats // per hook
	InstancesCreated   uint64    // instances instantiated and initialized
	InstancesDiscarded uint64    // instances thrown away after a failed call
	InstancesRecycled  uint64    // instances replaced after RecycleAfterCalls or RecycleMemoryBytes
	Loads              uint64    // modules loaded and put in service, the first one included
	Reloads            uint64    // successful swaps to a new module (Loads less the first)
	ReloadFailures     uint64    // loads that failed; the old module stayed
	RuntimesOpened     uint64    // wazero runtimes created (one per load attempt)
	RuntimesClosed     uint64    // wazero runtimes closed
	LogsDropped        uint64    // log lines dropped by the rate limit
}

// HookStats counts the calls of one hook.
type HookStats struct {
	Calls         uint64 // decisions asked
	Denied        uint64 // route only: denials by the plugin
	Timeouts      uint64 // killed at the deadline
	Traps         uint64 // guest trapped, exited or ran out of memory
	Garbage       uint64 // undecodable answers or guest-reported errors
	Busy          uint64 // no free instance before the deadline
	Canceled      uint64 // the caller's context ended
	BreakerOpen   uint64 // answered by the failure policy because the breaker was open
	Closed        uint64 // asked after Close
	BreakerIsOpen bool   // the breaker is open now
}

// Failures returns the number of calls answered by the failure policy.
func (s HookStats) Failures() uint64 {
	return s.Timeouts + s.Traps + s.Garbage + s.Busy + s.Canceled + s.BreakerOpen + s.Closed
}

type hookStats struct {
	calls, denied, timeouts, traps, garbage, busy, canceled, breakerOpen, closed atomic.Uint64
}

func (s *hookStats) count(kind error) {
	switch {
	case errors.Is(kind, ErrTimeout):
		s.timeouts.Add(1)
	case errors.Is(kind, ErrGarbage):
		s.garbage.Add(1)
	case errors.Is(kind, ErrBusy):
		s.busy.Add(1)
	case errors.Is(kind, ErrCanceled):
		s.canceled.Add(1)
	case errors.Is(kind, ErrBreakerOpen):
		s.breakerOpen.Add(1)
	case errors.Is(kind, ErrClosed):
		s.closed.Add(1)
	default:
		s.traps.Add(1)
	}
}

func (s *hookStats) snapshot(b *breaker) HookStats {
	return HookStats{
		Calls: s.calls.Load(), Denied: s.denied.Load(), Timeouts: s.timeouts.Load(), Traps: s.traps.Load(),
		Garbage: s.garbage.Load(), Busy: s.busy.Load(), Canceled: s.canceled.Load(),
		BreakerOpen: s.breakerOpen.Load(), Closed: s.closed.Load(), BreakerIsOpen: b.isOpen(),
	}
}

type stats struct {
	route, budget                                                  hookStats
	instancesCreated, instancesDiscarded, instancesRecycled        atomic.Uint64
	loads, reloads, reloadFailures, runtimesOpened, runtimesClosed atomic.Uint64
}

// Stats returns a snapshot of the counters. It is safe for concurrent use.
func (h *Host) Stats() Stats {
	s := &h.stats
	return Stats{
		Generation: h.Generation(),
		Route:      s.route.snapshot(&h.route), Budget: s.budget.snapshot(&h.budget),
		InstancesCreated: s.instancesCreated.Load(), InstancesDiscarded: s.instancesDiscarded.Load(),
		InstancesRecycled: s.instancesRecycled.Load(), Loads: s.loads.Load(), Reloads: s.reloads.Load(),
		ReloadFailures: s.reloadFailures.Load(), RuntimesOpened: s.runtimesOpened.Load(),
		RuntimesClosed: s.runtimesClosed.Load(), LogsDropped: h.logs.dropped.Load(),
	}
}
