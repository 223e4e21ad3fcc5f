package gateway

import (
	"context"
	"sync"
	"time"
)

// Reading a sandbox created through another node. A follower learns that an entry
// committed only with the leader's next message, so for a moment after a create its
// table may lack the pin that placed the sandbox on a member of its pool, and the
// records the owner wrote under it. The node its partition names (this one) would
// then answer 404 for a sandbox that exists. So before a node serves a request for a
// sandbox its replica does not know, it catches up once with the leader and looks at
// the owner again: a read right after a create, through any node, finds the sandbox.
// A create is not checked: the cluster fences a create written under a table that
// lacked a newer pin.
//
// A catch-up is a read index (cluster.Node.ReadBarrier: the leader's commit index,
// waited for here), or an empty write through the log when the leader cannot vouch
// for one. Concurrent requests share catch-ups (catchUpGroup), and a request only
// uses one that began after it did: one that began earlier may have read the
// leader's commit index before a create the request must see. docs/design.md,
// "Catching up without a write", says why that is enough.

// catchUpGroup shares catch-ups among the requests of one node: at most one runs,
// and at most one waits behind it, which every request that comes meanwhile joins,
// so N unknown requests that come while one runs cost two catch-ups, not N. Its
// zero value is ready; safe for concurrent use. One goroutine, counted in
// Server.bg, runs the catch-ups one after the other while there are any.
type catchUpGroup struct {
	mu      sync.Mutex
	running bool
	next    *catchUpRound // not begun yet: every request that comes now joins it
}

// catchUpRound is one catch-up: done is closed once it ended, with err.
type catchUpRound struct {
	done chan struct{}
	err  error
}

// Results of a catch-up (sandgate_forward_catchups_total's via label).
const (
	catchUpReadIndex = "read_index" // the leader's commit index, no write
	catchUpWrite     = "write"      // the fallback: an empty write through the log
	catchUpFailed    = "failed"     // an error, or neither within the hold timeout
)

// unknownHere reports whether this node, about to serve a request for sandbox sb
// (never a create), had to catch up because its replica did not know sb: the caller
// then looks at the owner again. It catches up once per request (*done, set here) and
// waits at most timeout; on a node alone in its cluster nothing can lag, and it
// returns false at once.
func (s *Server) unknownHere(ctx context.Context, sb string, timeout time.Duration, done *bool) bool {
	if sb == "" || *done {
		return false
	}
	*done = true
	if _, known := s.node.SandboxTenant(sb); known || s.alone() {
		return false
	}
	r := s.joinCatchUp()
	if r == nil {
		return false // shutting down
	}
	s.fwd.metrics.catchUpWaits.Inc()
	if s.cfg.onCatchUp != nil {
		s.cfg.onCatchUp(sb)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.done:
		if r.err != nil {
			s.log.Debug("failed to catch up before serving an unknown sandbox", "sandbox", sb, "err", r.err)
			return false
		}
		return true
	case <-t.C:
		s.log.Debug("no catch-up within the timeout before serving an unknown sandbox", "sandbox", sb, "timeout", timeout)
		return false
	case <-ctx.Done():
		return false
	}
}

// joinCatchUp returns a catch-up that begins after the call: the one waiting to
// run, or a new one, started now when none runs. It returns nil once the server is
// shutting down.
func (s *Server) joinCatchUp() *catchUpRound {
	return s.catchUps.join(func(r *catchUpRound) bool {
		if !s.trackStream(1) {
			return false
		}
		go s.runCatchUps(r)
		return true
	})
}

// runCatchUps runs r, then each catch-up that was queued meanwhile, until none is.
func (s *Server) runCatchUps(r *catchUpRound) {
	defer s.bg.Done()
	for r != nil {
		r = s.catchUps.ended(r, s.catchUpOnce())
	}
}

// join returns a catch-up that begins after the call: the one queued, which it
// joins, or a new one, queued behind the one running or, when none runs, handed
// to start (called with the group's lock held) to run now. It returns nil when
// start could not run it.
func (g *catchUpGroup) join(start func(r *catchUpRound) bool) *catchUpRound {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next != nil {
		return g.next
	}
	r := &catchUpRound{done: make(chan struct{})}
	if g.running {
		g.next = r
		return r
	}
	if !start(r) {
		return nil
	}
	g.running = true
	return r
}

// ended tells r's waiters that it ended with err, and returns the catch-up queued
// behind it, which the caller runs next, or nil: then none runs.
func (g *catchUpGroup) ended(r *catchUpRound, err error) *catchUpRound {
	r.err = err
	close(r.done)
	g.mu.Lock()
	defer g.mu.Unlock()
	next := g.next
	g.next = nil
	g.running = next != nil
	return next
}

// catchUpOnce runs one catch-up within the hold timeout, or until Shutdown.
func (s *Server) catchUpOnce() error {
	ctx, cancel := context.WithTimeout(s.streamCtx, s.cfg.HoldTimeout)
	defer cancel()
	wrote, err := s.cluster.ReadBarrier(ctx)
	via := catchUpReadIndex
	switch {
	case err != nil:
		via = catchUpFailed
	case wrote:
		via = catchUpWrite
	}
	s.fwd.metrics.catchUps.WithLabelValues(via).Inc()
	return err
}
