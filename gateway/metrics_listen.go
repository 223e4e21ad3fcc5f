package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
)

// ServeMetrics serves GET /metrics on ln without a token, for a Prometheus server that
// scrapes a separate address (serve's --metrics-listen); every other path is 404. The
// /metrics route on the API listener keeps needing a token. Only the node's figures are
// there: node-wide sums that name no sandbox or tenant. Shutdown stops it; it returns
// http.ErrServerClosed then. Call it at most once.
func (s *Server) ServeMetrics(ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		WriteTimeout:      s.cfg.ResponseWriteTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.metricsSrv = srv
	s.mu.Unlock()
	return srv.Serve(ln)
}

// shutdownMetrics stops the listener of ServeMetrics, if any, waiting for scrapes in
// flight within ctx.
func (s *Server) shutdownMetrics(ctx context.Context) {
	s.mu.Lock()
	srv := s.metricsSrv
	s.mu.Unlock()
	if srv != nil && srv.Shutdown(ctx) != nil {
		_ = srv.Close()
	}
}
