package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// streamRegistry knows the SSE and WebSocket streams this node serves, by sandbox, so
// that when the node stops owning a sandbox (the table moves it, or the node's lease
// lapses while other members could take its sandboxes: see streamAdmit) they end:
// WebSockets are closed with 1012 (service restart) and SSE streams finish, and
// clients reconnect, through any node, and resume by offset. It is safe for
// concurrent use.
type streamRegistry struct {
	kicked chan struct{} // wakes the watcher for a sweep; buffered 1

	mu   sync.Mutex
	next uint64
	by   map[string]map[uint64]func() // sandbox → stream → its stop function
}

func newStreamRegistry() *streamRegistry {
	return &streamRegistry{by: map[string]map[uint64]func(){}, kicked: make(chan struct{}, 1)}
}

// poke asks the watcher for a sweep.
func (g *streamRegistry) poke() {
	select {
	case g.kicked <- struct{}{}:
	default:
	}
}

// add registers a stream of sandbox sb; stop ends it (it may be called more than
// once, from the watcher's goroutine). The returned function unregisters it.
func (g *streamRegistry) add(sb string, stop func()) (remove func()) {
	g.mu.Lock()
	g.next++
	id := g.next
	if g.by[sb] == nil {
		g.by[sb] = map[uint64]func(){}
	}
	g.by[sb][id] = stop
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if m := g.by[sb]; m != nil {
			delete(m, id)
			if len(m) == 0 {
				delete(g.by, sb)
			}
		}
	}
}

// count returns how many streams of sandbox sb are registered.
func (g *streamRegistry) count(sb string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.by[sb])
}

// sweep stops and unregisters the streams of every sandbox that admit refuses for a
// reason that lasts (another owner, or no lease), and returns how many it stopped.
// The stop functions run without the lock.
func (g *streamRegistry) sweep(admit func(string) error) int {
	var stops []func()
	g.mu.Lock()
	for sb, m := range g.by {
		if !lostOwnership(admit(sb)) {
			continue
		}
		for _, stop := range m {
			stops = append(stops, stop)
		}
		delete(g.by, sb)
	}
	g.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	return len(stops)
}

// lostOwnership reports whether an admission error means this node may not serve
// the sandbox any more (not a shutdown, which ends streams by itself).
func lostOwnership(err error) bool {
	return errors.Is(err, cluster.ErrNotOwner) || errors.Is(err, cluster.ErrLeaseExpired)
}

// streamAdmit is the admission the streams of sandbox sb are judged by: the
// cluster's, except that the lapsed lease of a node alone in its cluster does not
// end them. Nobody can take its sandboxes over, so it keeps them running (fence);
// ending their streams would only make every client reconnect, to be refused until
// the lease is renewed. A lone node's renewal is a raft commit, an fsync, which a
// loaded machine can hold up past the lease.
func (s *Server) streamAdmit(sb string) error {
	err := s.cluster.Admit(sb)
	if errors.Is(err, cluster.ErrLeaseExpired) && s.alone() {
		return nil
	}
	return err
}

// watchOwnership is the registry's watcher goroutine, until Shutdown: it sweeps when
// the table changes and when the lease would run out unrenewed.
func (s *Server) watchOwnership() {
	for {
		changed := s.cluster.TableChanged()
		s.streams.sweep(s.streamAdmit)
		var expiry <-chan time.Time
		var t *time.Timer
		if valid, until := s.cluster.Lease(); valid {
			t = time.NewTimer(time.Until(until) + time.Millisecond)
			expiry = t.C
		}
		select {
		case <-changed:
		case <-expiry:
		case <-s.streams.kicked:
		case <-s.streamCtx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if s.streamCtx.Err() != nil {
			return
		}
	}
}

// streamContext is requestContext for an SSE stream of sandbox sb: it also ends when
// this node stops owning sb.
func (s *Server) streamContext(r *http.Request, sb string) (context.Context, context.CancelFunc) {
	ctx, cancel := s.requestContext(r)
	remove := s.watchStream(sb, cancel)
	return ctx, func() { remove(); cancel() }
}

// watchStream registers stop for sandbox sb's stream, and calls it at once if this
// node lost the sandbox before the registration (the watcher would not see that).
func (s *Server) watchStream(sb string, stop func()) (remove func()) {
	remove = s.streams.add(sb, stop)
	if lostOwnership(s.streamAdmit(sb)) {
		s.streams.poke()
	}
	return remove
}
