package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// RoutePolicy decides whether a request may be served. The plugins package provides the
// Wasm-backed implementation; nil allows everything.
type RoutePolicy interface {
	// Route is called on every authenticated request before it is served. It runs on
	// the request's goroutine and must return promptly.
	Route(ctx context.Context, req RouteRequest) RouteDecision
}

// RouteRequest is what a routing policy is asked about.
type RouteRequest struct {
	Tenant  string
	Method  string
	Route   string // the route pattern, e.g. "POST /v1/sandboxes/{sb}/exec"
	Sandbox string
	Labels  map[string]string
	Command []string // exec, process and session exec only: the argv that runs (sh -c for a command string)
}

// RouteDecision is a routing policy's answer.
type RouteDecision struct {
	Allow  bool
	Status int    // when denied: 403 (default) or 429
	Reason string // when denied: shown to the client
	// Pool, at sandbox create, restricts which nodes may own the sandbox.
	Pool map[string]string
}

// checkRoute asks the policy about r; labels are the sandbox's when known. It returns
// the pool the policy chose (at create), or the error to answer with.
func (s *Server) checkRoute(r *http.Request, pattern string, labels map[string]string, command []string) error {
	_, err := s.decideRoute(r, pattern, labels, command)
	return err
}

// checkRouteAs is checkRoute for a route asked about as another one (route.policyAs):
// the method the policy sees is pattern's, not the request's.
func (s *Server) checkRouteAs(r *http.Request, pattern string, command []string) error {
	method := r.Method
	if m, _, ok := strings.Cut(pattern, " "); ok && m != method && method != http.MethodHead {
		method = m
	}
	_, err := s.decideRouteFor(r, method, pattern, r.PathValue("sb"), nil, command)
	return err
}

func (s *Server) decideRoute(r *http.Request, pattern string, labels map[string]string, command []string) (map[string]string, error) {
	return s.decideRouteFor(r, r.Method, pattern, r.PathValue("sb"), labels, command)
}

// decideRouteFor asks the policy about a request for sandbox sb (the path's, or the
// one a create names).
func (s *Server) decideRouteFor(r *http.Request, method, pattern, sb string, labels map[string]string, command []string) (map[string]string, error) {
	if s.cfg.Policy == nil {
		return nil, nil
	}
	if labels == nil && sb != "" {
		if info, err := s.node.GetSandbox(r.Context(), sb); err == nil {
			labels = info.Labels
		}
	}
	d := s.cfg.Policy.Route(r.Context(), RouteRequest{
		Tenant: tenantOf(r.Context()), Method: method, Route: pattern,
		Sandbox: sb, Labels: labels, Command: command,
	})
	if d.Allow {
		return d.Pool, nil
	}
	status, code := http.StatusForbidden, codeForbidden
	switch d.Status {
	case http.StatusTooManyRequests:
		status, code = http.StatusTooManyRequests, codeBudgetExceeded
	case http.StatusServiceUnavailable:
		status, code = http.StatusServiceUnavailable, codeUnavailable
	}
	reason := d.Reason
	if reason == "" {
		reason = "denied by policy"
	}
	e := &apiError{Status: status, Code: code, Message: reason}
	if status == http.StatusServiceUnavailable {
		e.RetryAfter = time.Second
	}
	return nil, e
}
