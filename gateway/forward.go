package gateway

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// Forwarding: any node answers any request. A request that names a sandbox (its path
// has {sb}, or it creates one) is served where the cluster's table places the
// sandbox. The node that accepted the client is the only one that forwards; the node
// it forwards to re-validates and either serves, answers 421 (its table disagrees) or
// 503 with holdHeader (it owns the sandbox but holds no lease). Nodes trust these
// headers only to decide where to serve: every node authenticates the request's own
// token again, and the owner runs the tenancy and policy checks. See docs/design.md,
// "Forwarding".
const (
	// hopsHeader counts the forwards a request has made; the accepting node sends 1.
	hopsHeader = "X-Sandgate-Hops"
	// madeIDHeader carries the id the accepting node made for a create whose body
	// names none (createTarget); the body is sent as the client sent it, so that its
	// size limit is the client's.
	madeIDHeader = "X-Sandgate-Made-Id"
	// epochHeader is the epoch of the owner's assignment in the sender's table.
	epochHeader = "X-Sandgate-Epoch"
	// indexHeader is, on a 421, the table index of the node that refused: the sender
	// waits until its own table is there and retries once.
	indexHeader = "X-Sandgate-Index"
	// holdHeader marks a 503 from the forwarding layer of an owner that cannot serve
	// now (its lease lapsed, or it is handing the sandbox over): the sender holds the
	// request, as for an unreachable owner.
	holdHeader = "X-Sandgate-Hold"

	// DefaultHoldTimeout is Config.HoldTimeout's default.
	DefaultHoldTimeout = 5 * time.Second
	// holdMin and holdSpread make the jittered re-check of a held request: every
	// 20-100 ms, or at once when the table changes.
	holdMin, holdSpread = 20 * time.Millisecond, 80 * time.Millisecond
	// catchUpTimeout bounds how long an owner waits for its own table to reach the
	// epoch a sender stamped on a request before it answers 421.
	catchUpTimeout = time.Second
	// holdRetryAfter is the Retry-After of a 503 after the hold timeout.
	holdRetryAfter = time.Second
)

// forwardedRoute reports whether a route's requests are served by their sandbox's
// owner: every route that names a sandbox, and the create.
func forwardedRoute(pattern string) bool {
	return strings.Contains(pattern, "{sb}") || pattern == "POST /v1/sandboxes"
}

// routeToOwner decides where a request for a sandbox is served. It returns served true
// when the request was answered through another node (or err says why it could not
// be), and otherwise the request this node serves itself: r, or a copy whose body was
// buffered (and, for a create without an id, given the id the accepting node made).
func (s *Server) routeToOwner(w http.ResponseWriter, r *http.Request, rt route) (_ *http.Request, served bool, err error) {
	hops, err := hopsOf(r)
	if err != nil {
		return nil, false, err
	}
	sb := r.PathValue("sb")
	var body *replayBody
	if sb == "" { // a create: the id is in the body, or made here
		if sb, body, err = s.createTarget(r, hops == 0); err != nil {
			return nil, false, err
		}
		if sb == "" { // a body the handler refuses (400, 413): no owner to ask
			return body.restore(w, r, s.cfg.BodyReadTimeout), false, nil
		}
	}
	if hops > 0 {
		if err := s.revalidate(w, r, sb); err != nil {
			return nil, false, err
		}
		return body.restore(w, r, s.cfg.BodyReadTimeout), false, nil
	}
	return s.forwardLoop(w, r, rt, sb, body)
}

// hopsOf reads hopsHeader: 0 on a client's request.
func hopsOf(r *http.Request) (int, error) {
	raw := r.Header.Get(hopsHeader)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, badRequest("%s must be a non-negative integer, not %q", hopsHeader, raw)
	}
	return n, nil
}

// forwardLoop serves a client's request for sandbox sb: here when this node owns it
// and holds a lease, else through its owner. While the sandbox has no live owner (no
// owner in the table, its partition in handoff (cluster.ErrHandoff), the owner down,
// unreachable or without a lease, or this node the owner without a lease) the
// request is held, re-checked when the table changes
// or every 20-100 ms, for Config.HoldTimeout; then it is 503 with Retry-After. A 421
// from the owner is retried once after this node's table caught up with the owner's.
func (s *Server) forwardLoop(w http.ResponseWriter, r *http.Request, rt route, sb string, body *replayBody) (*http.Request, bool, error) {
	ctx := r.Context()
	self := s.cluster.ID()
	var h *holding // started at the first hold
	defer func() { h.end() }()
	retried, checked, synced := false, false, false
	for {
		// The wake-up channel is taken before the table is read, but only once the
		// request is held: TableChanged takes a lock, which the request path does not.
		var changed <-chan struct{}
		if h != nil {
			changed = s.cluster.TableChanged()
		}
		owner, epoch, ok := s.cluster.Owner(sb)
		switch {
		case ok && owner == self:
			err := s.handoffs.serve(sb)
			if err == nil && s.unknownHere(ctx, r.PathValue("sb"), s.cfg.HoldTimeout, &synced) {
				continue
			}
			if err == nil {
				return body.restore(w, r, s.cfg.BodyReadTimeout), false, nil
			}
			if errors.Is(err, cluster.ErrClosed) {
				return nil, false, errorf(http.StatusServiceUnavailable, codeUnavailable, "this node is shutting down").retry(holdRetryAfter)
			}
			// No lease, or the table moved between the two reads: hold, look again.
		case ok:
			addr := s.fwd.addrOf(s.cluster, owner)
			if addr == "" {
				break // the owner is down or left: its partitions move soon
			}
			if !checked {
				checked = true
				if err := s.prepareForward(w, r, rt); err != nil {
					return nil, false, err
				}
			}
			if body == nil {
				var err error
				if body, err = readBody(r); err != nil {
					return nil, false, err
				}
			}
			a := s.proxyTo(w, r, rt, body, addr, epoch)
			switch a.kind {
			case attemptProxied:
				s.fwd.metrics.forwards.WithLabelValues(forwardOK).Inc()
				return nil, true, nil
			case attemptFailed:
				if ctx.Err() == nil { // not a client that went away
					s.fwd.metrics.forwards.WithLabelValues(forwardUnavailable).Inc()
				}
				return nil, true, a.err
			case attemptMisdirected:
				if !retried {
					retried = true
					s.fwd.metrics.forwards.WithLabelValues(forwardRetry421).Inc()
					if s.catchUp(ctx, h, a.index) {
						continue
					}
				}
			}
		}
		if h == nil {
			h = s.fwd.startHold(s.cfg.HoldTimeout)
			continue // look again at once, now with the channel in hand
		}
		if !h.wait(ctx, s.streamCtx, changed) {
			if err := ctx.Err(); err != nil {
				return nil, true, err
			}
			s.fwd.metrics.forwards.WithLabelValues(forwardUnavailable).Inc()
			return nil, true, errorf(http.StatusServiceUnavailable, codeUnavailable,
				"sandbox %s has no live owner: none could serve it within the hold timeout of %v", sb, s.cfg.HoldTimeout).retry(holdRetryAfter)
		}
	}
}

// prepareForward does, once, what the accepting node does before a request leaves
// it: a WebSocket handshake is checked here, Origin included, as the contract says
// (the accepting node checks); Origin is then removed, so the owner judges the
// forwarded handshake by its token alone, as it does a client that sends none.
func (s *Server) prepareForward(w http.ResponseWriter, r *http.Request, rt route) error {
	if rt.stream != streamWebSocket {
		return nil
	}
	if err := checkHandshake(w, r, s.originRule()); err != nil {
		return err
	}
	r.Header.Del("Origin")
	return nil
}

// catchUp waits, within the hold timeout, until this node's table is at index (the
// owner's, from a 421). It reports whether it got there.
func (s *Server) catchUp(ctx context.Context, h *holding, index uint64) bool {
	d := s.cfg.HoldTimeout
	if h != nil {
		d = time.Until(h.deadline)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.cluster.WaitApplied(ctx, index) == nil
}

// revalidate is the owner's side of a forwarded request: nil when this node owns sb
// and holds a lease, judged on a table at least as new as the sender's (the sandbox's
// epoch here is the sender's or later, or this table is at that index or later:
// epochs are raft indexes). A sender whose table is newer is waited for, once, up to
// catchUpTimeout. Otherwise it is 421 with this node's table index, or 503 with
// holdHeader without a lease or while the sandbox is being handed from this node
// to another (cluster.ErrHandoff): the sender holds the request.
func (s *Server) revalidate(w http.ResponseWriter, r *http.Request, sb string) error {
	want, _ := strconv.ParseUint(r.Header.Get(epochHeader), 10, 64)
	self := s.cluster.ID()
	caughtUp, synced := false, false
	for range 3 { // a table that moves between Owner and Admit is read again
		// Owner names the old owner of a partition in handoff (ok false): it
		// answers that the request is to be held rather than sent elsewhere.
		owner, epoch, _ := s.cluster.Owner(sb)
		current := epoch >= want || s.cluster.TableIndex() >= want
		if owner == self && current {
			err := s.handoffs.serve(sb)
			if err == nil && s.unknownHere(r.Context(), r.PathValue("sb"), catchUpTimeout, &synced) {
				continue
			}
			switch {
			case err == nil:
				return nil
			case errors.Is(err, cluster.ErrLeaseExpired):
				w.Header().Set(holdHeader, "lease")
				return errorf(http.StatusServiceUnavailable, codeUnavailable, "this node's cluster lease lapsed; it serves sandbox %s again once it is renewed", sb).retry(holdRetryAfter)
			case errors.Is(err, cluster.ErrHandoff):
				w.Header().Set(holdHeader, "handoff")
				return errorf(http.StatusServiceUnavailable, codeUnavailable, "sandbox %s is being handed to another node", sb).retry(holdRetryAfter)
			case !errors.Is(err, cluster.ErrNotOwner):
				return errorf(http.StatusServiceUnavailable, codeUnavailable, "this node cannot serve sandbox %s: %v", sb, err).retry(holdRetryAfter)
			}
			continue
		}
		if !current && !caughtUp {
			caughtUp = true
			ctx, cancel := context.WithTimeout(r.Context(), catchUpTimeout)
			err := s.cluster.WaitApplied(ctx, want)
			cancel()
			if err == nil {
				continue
			}
		}
		break
	}
	w.Header().Set(indexHeader, strconv.FormatUint(s.cluster.TableIndex(), 10))
	return errorf(http.StatusMisdirectedRequest, codeUnavailable,
		"sandbox %s is not served by this node (its table is at index %d)", sb, s.cluster.TableIndex())
}

// holding is one held request: its deadline, and the metrics of its hold.
type holding struct {
	f        *forwarder
	began    time.Time
	deadline time.Time
}

func (f *forwarder) startHold(timeout time.Duration) *holding {
	f.metrics.forwards.WithLabelValues(forwardHeld).Inc()
	f.metrics.heldNow.Inc()
	now := time.Now()
	return &holding{f: f, began: now, deadline: now.Add(timeout)}
}

// wait waits for the next re-check: the table changed, or 20-100 ms passed. It
// reports false when the hold timeout has passed, the client went away or the server
// shuts down.
func (h *holding) wait(ctx, server context.Context, changed <-chan struct{}) bool {
	left := time.Until(h.deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(left, holdMin+rand.N(holdSpread)))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-server.Done():
		return false
	}
	return time.Now().Before(h.deadline)
}

// end records the hold's duration; a nil holding (never held) does nothing.
func (h *holding) end() {
	if h == nil {
		return
	}
	h.f.metrics.heldNow.Dec()
	h.f.metrics.holdTime.Observe(time.Since(h.began).Seconds())
}

// retry sets e's Retry-After and returns e.
func (e *apiError) retry(d time.Duration) *apiError {
	e.RetryAfter = d
	return e
}
