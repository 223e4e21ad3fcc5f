package gateway

import (
	"context"
	"net"
	"net/http"

	"github.com/sandgate/sandgate/runtime"
)

// connKey is the context key of the client connection a request came on (Serve's
// ConnContext).
type connKey struct{}

// withConn is http.Server.ConnContext: it makes the connection reachable from its
// requests' contexts (clientConnOf).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// clientConnOf returns the connection r came on, or nil under a server of the
// caller's own (Handler), which does not record it.
func clientConnOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}

// liveOptions are the subscription options of a live stream (WebSocket or SSE) of
// process output to the client of r: a holder the process waits for while it keeps
// reading, for at most Config.StreamHoldBound when it stops. A stream takes output
// from the ring in pieces of up to 64 KiB and the kernel queues megabytes of them for
// a client: one that reads slowly but steadily may take longer than the bound to
// drain what was queued, with no take from the ring meanwhile. So the holder also
// counts as reading while the client's TCP stack acknowledges bytes (connProgress).
func (s *Server) liveOptions(r *http.Request) runtime.SubscribeOptions {
	o := runtime.SubscribeOptions{Hold: true, HoldBound: s.cfg.StreamHoldBound}
	if c := clientConnOf(r); c != nil {
		o.Progress = connProgress(c)
	}
	return o
}
