package gateway

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// forwarder holds what forwarding shares across requests: one keep-alive transport to
// the other nodes, the member addresses of the current table, and the metrics. It is
// safe for concurrent use.
type forwarder struct {
	transport *http.Transport
	members   atomic.Pointer[memberAddrs]
	metrics   *forwardMetrics
	errLog    *log.Logger
}

// memberAddrs are the HTTP addresses of the alive members in the table at index.
type memberAddrs struct {
	index uint64
	addr  map[cluster.NodeID]string
}

// forwardDialTimeout bounds connecting to an owner: a node that does not answer within
// it counts as unreachable and the request is held.
const forwardDialTimeout = time.Second

func newForwarder(log *slog.Logger) *forwarder {
	return &forwarder{
		// HTTP/1.1 only (no TLS, no h2): a WebSocket upgrade goes through as it came.
		transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: forwardDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true,
		},
		metrics: newForwardMetrics(),
		errLog:  slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// close drops the idle connections to other nodes.
func (f *forwarder) close() { f.transport.CloseIdleConnections() }

// addrOf returns the HTTP address of member id if it serves what it owns (alive, or
// draining: a draining member serves its sandboxes until each is handed over, and
// keeps those a drain cannot move), else "". The addresses are rebuilt only when the
// table's index moved: members change only with the table.
func (f *forwarder) addrOf(n *cluster.Node, id cluster.NodeID) string {
	idx := n.TableIndex()
	m := f.members.Load()
	if m == nil || m.index != idx {
		m = &memberAddrs{index: idx, addr: map[cluster.NodeID]string{}}
		for _, mb := range n.Members() {
			serving := mb.Status == cluster.StatusAlive || mb.Status == cluster.StatusDraining
			if serving && mb.HTTPAddr != "" {
				m.addr[mb.ID] = mb.HTTPAddr
			}
		}
		f.members.Store(m)
	}
	return m.addr[id]
}

// attemptKind is how one forward ended.
type attemptKind int

const (
	// attemptProxied: the owner's answer went to the client, whatever it was.
	attemptProxied attemptKind = iota
	// attemptMisdirected: the owner answered 421 with its table index.
	attemptMisdirected
	// attemptHold: the owner could not be reached, or answered 503 with holdHeader;
	// nothing went to the client and the request can be sent again.
	attemptHold
	// attemptFailed: the forward failed where it cannot be sent again (a streamed
	// body was partly sent, the owner broke off, the client went away); err says why.
	attemptFailed
)

type attempt struct {
	kind  attemptKind
	index uint64 // attemptMisdirected: the owner's table index
	err   error  // attemptFailed
}

// waits reports whether a long-poll request asks to wait (wait_ms above 0).
func waits(r *http.Request) bool {
	v := r.URL.Query().Get("wait_ms")
	return v != "" && strings.Trim(v, "0") != ""
}

// errRetryable ends a proxied exchange whose answer the client must not see (a 421, or
// a 503 with holdHeader) so that the request can be sent again.
var errRetryable = errors.New("gateway: owner asked for a retry")

// proxyTo sends r to the owner at addr once, with httputil.ReverseProxy: the answer is
// streamed to w as it comes (flushed at once, for SSE) and a WebSocket upgrade is
// tunnelled. A 421 and a 503 with holdHeader are kept from the client and reported
// instead, as is a connection that could not be made, when the body can be sent again.
func (s *Server) proxyTo(w http.ResponseWriter, r *http.Request, rt route, body *replayBody, addr string, epoch uint64) attempt {
	if !body.ready() {
		return attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable,
			"the owner of this sandbox changed while the request body was being sent; send it again").retry(holdRetryAfter)}
	}
	var a attempt
	ctx := r.Context()
	// A shutdown ends a proxied stream or long-poll, as it ends a local one; else this
	// node's shutdown would wait its whole grace for an owner that is not shutting
	// down. A long-poll cut off here is answered 503 with Retry-After: the owner
	// cannot be told to answer early, so a take it ran may have hidden messages, which
	// come back once their visibility ends (at least once), as after any lost answer.
	if rt.stream != "" || rt.longPoll && waits(r) {
		var cancel context.CancelFunc
		ctx, cancel = s.requestContext(r)
		defer cancel()
	}
	// Whether the connection was a kept-alive one: one that breaks before any answer
	// was most likely closed idle by its end, with the request unread, and a request
	// that is safe to repeat is sent again (forward_replay.go).
	var reused atomic.Bool
	replay := replaySafe(r)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused.Store(info.Reused) },
	})
	out := r.WithContext(ctx)
	body.attach(out)
	if rt.stream != "" {
		if !s.trackStream(1) {
			return attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable, "server shutting down").retry(holdRetryAfter)}
		}
		defer s.bg.Done()
		s.fwd.metrics.streams.Inc()
		defer s.fwd.metrics.streams.Dec()
		if rec, ok := w.(*statusRecorder); ok && rt.stream == streamSSE {
			// An SSE reader that takes nothing is dropped, as on the owner.
			rec.writeTimeout = s.cfg.WSWriteTimeout
		}
		if c := clientConnOf(r); c != nil {
			paceToClient(c) // the owner sees the client's pace (stream_progress_linux.go)
		}
	}
	reqID := w.Header().Get("X-Request-Id")
	answered := false // the owner's answer is going to the client
	rp := &httputil.ReverseProxy{
		Transport:     s.fwd.transport,
		FlushInterval: -1,
		ErrorLog:      s.fwd.errLog,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", addr, ""
			h := pr.Out.Header
			h.Set(hopsHeader, "1")
			h.Set(epochHeader, strconv.FormatUint(epoch, 10))
			h.Set("X-Request-Id", reqID)
			if body.streamed() {
				h.Set("Expect", "100-continue") // a 421 then costs no body bytes
			}
			if !replay && pr.Out.Method == http.MethodGet && pr.Out.Body == nil {
				pr.Out.Body, pr.Out.GetBody = noReplayBody{}, nil
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			switch {
			case resp.StatusCode == http.StatusMisdirectedRequest && resp.Header.Get(indexHeader) != "":
				a.kind = attemptMisdirected
				a.index, _ = strconv.ParseUint(resp.Header.Get(indexHeader), 10, 64)
				return errRetryable
			case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(holdHeader) != "":
				a.kind = attemptHold
				return errRetryable
			}
			resp.Header.Del("X-Request-Id") // this node's wrapper set the same one
			a.kind, answered = attemptProxied, true
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			switch {
			case answered: // an upgrade that failed after the owner's answer: never sent again
				s.log.Warn("forwarded upgrade failed", "id", reqID, "to", addr, "path", r.URL.Path, "err", err)
				a = attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable,
					"the connection to the owner of this sandbox failed: %v", err).retry(holdRetryAfter)}
			case errors.Is(err, errRetryable):
				if !body.ready() { // the owner read part of a streamed body first
					a = attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable,
						"the owner of this sandbox changed while the request body was being sent; send it again").retry(holdRetryAfter)}
				}
			case r.Context().Err() != nil: // the client went away
				a = attempt{kind: attemptFailed, err: r.Context().Err()}
			case ctx.Err() != nil:
				a = attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable, "server shutting down").retry(holdRetryAfter)}
			case (dialFailed(err) || reused.Load() && replay) && body.ready():
				a.kind = attemptHold
			case reused.Load() && body.ready():
				s.log.Warn("forward broke before an answer", "id", reqID, "to", addr, "path", r.URL.Path, "err", err)
				a = attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable,
					"the connection to the owner of this sandbox broke before it answered; the request may or may not have taken effect: %v", err).retry(holdRetryAfter)}
			default:
				s.log.Warn("forward failed", "id", reqID, "to", addr, "path", r.URL.Path, "err", err)
				a = attempt{kind: attemptFailed, err: errorf(http.StatusServiceUnavailable, codeUnavailable,
					"the owner of this sandbox did not answer: %v", err).retry(holdRetryAfter)}
			}
		},
	}
	rp.ServeHTTP(w, out)
	return a
}

// trackStream counts the n goroutines of a stream (a proxied one, a WebSocket) among
// those Shutdown waits for, unless the server is closing (false). Each calls s.bg.Done
// when it ends.
func (s *Server) trackStream(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.bg.Add(n)
	return true
}

// dialFailed reports whether err is a failure to connect: nothing was sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
