package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// route is one served API route.
type route struct {
	pattern string // ServeMux pattern, "METHOD /path/{var}"
	handle  handlerFunc
	// public routes need no token.
	public bool
	// queryToken routes accept ?token= (SSE and WebSocket: browsers cannot set headers).
	queryToken bool
	// stream is the transport of a streaming route (streamSSE or streamWebSocket), ""
	// for a request/response one: metrics record a stream's lifetime, not its latency.
	stream string
	// policyInHandler routes call the routing policy themselves, once they know the
	// command or labels the policy is asked about.
	policyInHandler bool
	// policyAs is the route the routing policy is asked about, when not this one: the
	// OpenCode routes are asked as the process routes they map onto, so a policy
	// written for those governs them too (opencode.go).
	policyAs string
	// ticket routes also accept ?ticket=, a connect ticket (opencode_ticket.go),
	// checked and used up by the sandbox's owner.
	ticket bool
	// longPoll routes wait with ?wait_ms= for something to happen; a shutdown ends
	// the wait, here and when they are forwarded (forward_proxy.go).
	longPoll bool
}

// handlerFunc is an API handler. A returned error is rendered by writeError, the one
// place errors become the contract's error shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

const (
	sbPath   = "/v1/sandboxes/{sb}"
	procPath = sbPath + "/processes/{p}"
	sessPath = sbPath + "/sessions/{s}"
	termPath = sbPath + "/terminals/{t}"
)

func (s *Server) routeTable() []route {
	api := []route{
		{pattern: "GET /healthz", handle: s.healthz, public: true},
		{pattern: "GET /metrics", handle: s.serveMetrics},
		{pattern: "GET /v1/openapi.json", handle: s.openAPI, public: true},

		{pattern: "POST /v1/sandboxes", handle: s.createSandbox, policyInHandler: true},
		{pattern: "GET /v1/sandboxes", handle: s.listSandboxes},
		{pattern: "GET " + sbPath, handle: s.getSandbox},
		{pattern: "DELETE " + sbPath, handle: s.deleteSandbox},

		{pattern: "POST " + sbPath + "/exec", handle: s.exec, policyInHandler: true},

		{pattern: "POST " + sbPath + "/processes", handle: s.createProcess, policyInHandler: true},
		{pattern: "GET " + sbPath + "/processes", handle: s.listProcesses},
		{pattern: "GET " + procPath, handle: s.getProcess, longPoll: true},
		{pattern: "DELETE " + procPath, handle: s.deleteProcess},
		{pattern: "POST " + procPath + "/signal", handle: s.signalProcess},
		{pattern: "POST " + procPath + "/input", handle: s.inputProcess},
		{pattern: "POST " + procPath + "/resize", handle: s.resizeProcess},
		{pattern: "GET " + procPath + "/output", handle: s.processOutput, queryToken: true, stream: streamSSE},
		{pattern: "GET " + procPath + "/ws", handle: s.processWS, queryToken: true, stream: streamWebSocket},

		{pattern: "POST " + sbPath + "/sessions", handle: s.createSession},
		{pattern: "GET " + sbPath + "/sessions", handle: s.listSessions},
		{pattern: "GET " + sessPath, handle: s.getSession},
		{pattern: "POST " + sessPath + "/exec", handle: s.sessionExec, policyInHandler: true},
		{pattern: "DELETE " + sessPath, handle: s.deleteSession},

		{pattern: "PUT " + termPath, handle: s.putTerminal},
		{pattern: "GET " + sbPath + "/terminals", handle: s.listTerminals},
		{pattern: "GET " + termPath, handle: s.getTerminal},
		{pattern: "POST " + termPath + "/resize", handle: s.resizeTerminal},
		{pattern: "DELETE " + termPath, handle: s.deleteTerminal},
		{pattern: "GET " + termPath + "/ws", handle: s.terminalWS, queryToken: true, stream: streamWebSocket},

		{pattern: "GET " + sbPath + "/files", handle: s.readFile},
		{pattern: "PUT " + sbPath + "/files", handle: s.writeFile},
		{pattern: "DELETE " + sbPath + "/files", handle: s.deleteFile},
		{pattern: "POST " + sbPath + "/files/mkdir", handle: s.mkdir},

		{pattern: "GET " + sbPath + "/events", handle: s.listEvents},
		{pattern: "GET " + sbPath + "/events/stream", handle: s.streamEvents, queryToken: true, stream: streamSSE},
		{pattern: "POST " + sbPath + "/events", handle: s.postEvent},
		{pattern: "POST " + sbPath + "/messages", handle: s.postMessage},
		{pattern: "GET " + sbPath + "/messages", handle: s.takeMessages, longPoll: true},
		{pattern: "DELETE " + sbPath + "/messages/{id}", handle: s.ackMessage},
		{pattern: "POST " + sbPath + "/messages/ack", handle: s.ackMessages},

		{pattern: "GET /v1/whoami", handle: s.whoami},
		{pattern: "GET /v1/cluster", handle: s.clusterInfo},
		{pattern: "POST /v1/cluster/join", handle: s.clusterJoin},
		{pattern: "DELETE /v1/cluster/members/{id}", handle: s.clusterRemove},
		{pattern: "POST /v1/cluster/members/{id}/drain", handle: s.clusterDrain},
		{pattern: "GET /v1/cluster/secret", handle: s.clusterSecret},
		{pattern: "POST /v1/cluster/tokens", handle: s.clusterTokens},
		{pattern: "POST /v1/cluster/pins", handle: s.clusterPin},
		{pattern: "DELETE /v1/cluster/pins/{sandbox}", handle: s.clusterUnpin},
	}
	// OpenCode's PTY API: a mapping onto the process routes (opencode.go).
	return append(api, s.openCodeRoutes()...)
}

func (s *Server) buildRoutes() {
	s.mux = http.NewServeMux()
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.pattern, s.wrap(rt))
	}
	s.metrics.declareStreams(s.routes)
	if s.cfg.UI != nil {
		s.mux.Handle("GET /{$}", s.cfg.UI)
		s.mux.Handle("GET /t/{sb}/{t}", s.cfg.UI)
		s.mux.Handle("GET /assets/", s.cfg.UI)
	}
	// Node to node, signed with the cluster secret rather than a token (node_auth.go):
	// not an API route, so not in the table the API's tests and spec walk.
	s.mux.Handle(workspaceRoute, s.wrap(route{pattern: workspaceRoute, handle: s.receiveWorkspace, public: true}))
	s.mux.Handle(announceRoute, s.wrap(route{pattern: announceRoute, handle: s.receiveAnnounce, public: true}))
	unknown := s.wrap(route{pattern: "", handle: s.unknownRoute, public: true})
	s.mux.Handle("/", unknown)
	// ServeMux answers a path that is not in canonical form ("//", "/./", "/../", as
	// an empty id in a client makes) with a redirect in HTML; here it is the unknown
	// route it names: 401 without a token, else 404, in the error shape.
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.openCodeCORS(w, r) {
			return // a preflight (opencode_cors.go)
		}
		if p := r.URL.Path; p != "" && canonicalPath(p) != p {
			unknown.ServeHTTP(w, r)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// canonicalPath is p cleaned as ServeMux cleans it: a trailing slash stays.
func canonicalPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// pathIDs are the path variables that hold ids, validated before any handler runs.
var pathIDs = []string{"sb", "p", "s", "t", "id", "ptyID"}

// wrap adds what every API request gets: a request id, auth, id validation, the routing
// policy, metrics, logging and error rendering.
func (s *Server) wrap(rt route) http.Handler {
	observed := s.metrics.forRoute(rt.pattern, rt.stream)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		reqID := r.Header.Get("X-Request-Id")
		if reqID == "" || len(reqID) > 64 {
			reqID = newRequestID()
		}
		w.Header().Set("X-Request-Id", reqID)
		rec := &statusRecorder{ResponseWriter: w}
		if !rt.queryToken { // not a stream: its response gets a write deadline
			rec.writeTimeout = s.cfg.ResponseWriteTimeout
			// Cleared: the previous response on this connection may have left one.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		err := s.serveRoute(rec, r, rt)
		if err != nil {
			s.writeError(rec, r, err)
		}
		d := time.Since(start)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		observed.observe(status, d)
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		// Asked first: the arguments of a line that is not logged were boxed for nothing.
		if s.log.Enabled(r.Context(), level) {
			s.log.Log(r.Context(), level, "request", "id", reqID, "method", r.Method, "path", r.URL.Path,
				"status", status, "duration", d, "tenant", tenantOf(r.Context()))
		}
	})
}

func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, rt route) error {
	// ticket is a connect ticket that stands in for the token; the sandbox's owner
	// checks it, once the request got there.
	var ticket string
	if !rt.public {
		authed, err := s.authenticate(r, rt.queryToken)
		if err != nil {
			if ticket = requestTicket(r, rt); ticket == "" {
				return err
			}
			authed = r
		}
		r = authed
	}
	for _, name := range pathIDs {
		if v := r.PathValue(name); v != "" && !runtime.ValidID(v) {
			return badRequest("invalid %s id %q: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", idNoun(name, rt.pattern), v)
		}
	}
	if !rt.public && forwardedRoute(rt.pattern) {
		var served bool
		var err error
		if r, served, err = s.routeToOwner(w, r, rt); served || err != nil {
			return err
		}
	}
	if ticket != "" {
		var err error
		if r, err = s.useTicket(r, ticket); err != nil {
			return err
		}
	}
	if sb := r.PathValue("sb"); sb != "" && !rt.public {
		if err := s.checkSandboxAccess(r, sb); err != nil {
			return err
		}
	}
	if !rt.public && !rt.policyInHandler {
		pattern := rt.pattern
		if rt.policyAs != "" {
			pattern = rt.policyAs
		}
		if err := s.checkRouteAs(r, pattern, nil); err != nil {
			return err
		}
	}
	return rt.handle(w, r)
}

// authenticate returns r with who its token speaks for, or the 401 for a missing or
// wrong token.
func (s *Server) authenticate(r *http.Request, queryAllowed bool) (*http.Request, error) {
	who, ok := s.tokens.principal(requestToken(r, queryAllowed))
	if !ok {
		return nil, errorf(http.StatusUnauthorized, codeUnauthorized, "missing or wrong token")
	}
	return r.WithContext(withPrincipal(r.Context(), who)), nil
}

// idNoun names what the path variable pathVar of the route pattern identifies, for
// error messages: {id} is a message on the message routes and a member on the
// cluster's.
func idNoun(pathVar, pattern string) string {
	switch pathVar {
	case "sb":
		return "sandbox"
	case "p":
		return "process"
	case "s":
		return "session"
	case "t":
		return "terminal"
	case "ptyID":
		return "pty"
	}
	if strings.Contains(pattern, "/messages/") {
		return "message"
	}
	return "member"
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// unknownRoute answers a request no route matched: 405 with Allow when the path is
// served under other methods (the contract has no code for it, so invalid_argument),
// else 404. Under /v1 the token is checked first, as on every API route: a client
// without one learns nothing of the routes.
func (s *Server) unknownRoute(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
		if _, err := s.authenticate(r, true); err != nil {
			return err
		}
	}
	if canonicalPath(r.URL.Path) != r.URL.Path {
		return notFound("no route for %s %s: the path has an empty, \".\" or \"..\" element", r.Method, r.URL.Path)
	}
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		return notFound("no route for %s %s", r.Method, r.URL.Path)
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return errorf(http.StatusMethodNotAllowed, codeInvalidArgument, "method %s is not allowed on %s (allowed: %s)",
		r.Method, r.URL.Path, strings.Join(allowed, ", "))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ok\n"))
	return err
}

// serveMetrics serves /metrics on the API listener to any valid token, as the v1
// contract has it: its figures are node-wide sums and name no sandbox.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	s.metrics.handler().ServeHTTP(w, r)
	return nil
}

// requestContext is the context for work a request starts and waits for: the request's
// own, also cancelled when the server shuts its streams down.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.streamCtx, cancel)
	return ctx, func() { stop(); cancel() }
}
