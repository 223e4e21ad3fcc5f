package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/runtime"
)

// Config configures a gateway node. The zero value of each field means its default.
type Config struct {
	// Listen is the HTTP address, shown to clients as this node's http_addr.
	// Defaults to 127.0.0.1:7070.
	Listen string
	// DataDir holds actor storage and workspaces. Defaults to ./data.
	DataDir string
	// Tokens maps API tokens to who they speak for: a tenant, and whether the token is
	// an admin's (see Principal). Every tenant name must be non-empty. A server whose
	// Listen address is not loopback refuses to start without one.
	Tokens map[string]Principal
	// MaxSandboxesPerTenant caps how many sandboxes one tenant may have on this node;
	// a create past it is 429 budget_exceeded naming the limit. Zero means the default
	// (DefaultMaxSandboxesPerTenant); a negative value means no limit.
	MaxSandboxesPerTenant int
	// NodeID names this node. Defaults to a random UUID made once and kept in
	// DataDir/node-id: stable across restarts, and distinct for nodes sharing a host.
	NodeID string
	// RaftListen is the host:port of this node's raft transport, which other nodes
	// must reach; port 0 picks a free one. Defaults to 127.0.0.1:0 (serve's flag defaults
	// to 127.0.0.1:7071).
	RaftListen string
	// Join is the HTTP address (host:port or http://host:port) of any member of the
	// cluster this node joins; empty bootstraps a single-node cluster. New calls that
	// member with an admin token of Tokens, which the cluster must already accept, to
	// fetch the cluster secret and be added, then waits for its first lease. A DataDir
	// with raft state resumes its cluster whatever Join says, calling nobody.
	Join string
	// RaftMultiplier scales the raft timeouts (heartbeat and election 500 ms): above
	// 1 for slow or noisy hosts, below for tests. Zero means 1.
	RaftMultiplier float64
	// LeaseTTL is the node lease L: a node serves its sandboxes only while it holds
	// one, and a silent node's sandboxes move L + 0.5 s after its last heartbeat. Zero
	// means 3 s.
	LeaseTTL time.Duration
	// RebalanceRate bounds how many partitions per second the leader moves to
	// rebalance or to drain a member (each a planned move). Zero means 64.
	RebalanceRate int
	// RaftLog receives raft's own log lines (warnings and errors); nil discards them.
	RaftLog io.Writer
	// Labels are this node's labels, for routing policy.
	Labels map[string]string
	// AllowedOrigins are extra Origin host patterns (path.Match syntax, e.g.
	// "app.example.com", "*.example.com" or "localhost:*"; a pattern with "://" is
	// matched against scheme://host) whose pages may open WebSockets. Besides them only
	// pages served from the server's own listen address may, and for a loopback listen
	// address also localhost, 127.0.0.1 and [::1] on the same port; a server listening
	// on all interfaces allows only these patterns. The request's Host header is never
	// trusted (see checkHandshake).
	AllowedOrigins []string
	// PolicyFile is a Wasm policy plugin (.wasm) asked for routing and budgets; it is
	// watched and reloaded when it changes (see ReloadPolicy). Empty means no plugin.
	PolicyFile string
	// PolicyConfig is handed to the plugin's init.
	PolicyConfig []byte
	// PolicyTimeout bounds each plugin call; zero means the plugin host's default (20 ms).
	PolicyTimeout time.Duration
	// Policy decides routing when PolicyFile is empty; nil allows every request.
	Policy RoutePolicy
	// Budgets decides sandbox budgets; nil means the actor's built-in default policy.
	Budgets actor.Policy
	// Defaults are the operator's default budget: what a sandbox gets where the policy
	// has no opinion (serve's --budget "default"). Zero fields mean the built-in
	// defaults (actor.DefaultBudget), narrowed to Limits.
	Defaults actor.Budget
	// Limits are the operator's budget maxima (--budget "max"): every policy answer is
	// clamped to them. Zero fields mean the default's. A default above its maximum is a
	// start-up error.
	Limits actor.Budget
	// DiskImages enforces budgets' disk_bytes with an ext4 image per sandbox mounted on
	// its workspace (actor.Config.DiskImages): it needs root, loop devices and
	// mkfs.ext4, and the node logs at start whether quotas are enforced and why not.
	// Default off; serve turns it on.
	DiskImages bool
	// UI serves the browser pages (/, /t/{sb}/{t}, /assets/); nil serves none.
	UI http.Handler
	// Logger receives structured logs; nil logs to stderr as text.
	Logger *slog.Logger
	// ShutdownGrace bounds how long Shutdown waits for in-flight requests. Defaults to 10 s.
	ShutdownGrace time.Duration
	// ReadHeaderTimeout bounds reading a request's headers. Defaults to 10 s.
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout is how long a request body may send nothing before its
	// connection is cut: it bounds each wait for more of the body, not the whole body,
	// so a slow upload that keeps going is never cut. Defaults to 30 s.
	BodyReadTimeout time.Duration
	// ResponseWriteTimeout is how long a response (other than an SSE or WebSocket
	// stream, which have their own deadlines) may wait for a client that reads nothing
	// before its connection is cut; like BodyReadTimeout it bounds each wait, so a slow
	// download that keeps reading is never cut. Defaults to 30 s.
	ResponseWriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	// Defaults to 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request's headers (431 past it). Defaults to
	// 64 KiB.
	MaxHeaderBytes int
	// WSWriteTimeout is how long one WebSocket frame may wait to reach a client that
	// reads nothing before the client is closed with 1013 (it may resume by offset), and
	// the write deadline of each SSE event (process output and event streams): an SSE
	// reader that takes nothing for this long is dropped. Defaults to 10 s.
	WSWriteTimeout time.Duration
	// StreamHoldBound is how long a WebSocket or SSE reader of process output that
	// makes no progress may keep the process waiting while it is a whole output ring
	// behind; past it the process goes on, and the reader is sent a gap when it reads
	// again. Defaults to 5 s (runtime.DefaultHoldBound).
	StreamHoldBound time.Duration
	// Runtime is the runtime driver: RuntimeNamespace (each sandbox in namespaces and
	// cgroups of its own; the start fails where that does not work), RuntimeLocal
	// (host processes as the server's user, for development), or "" for the namespace
	// driver where a probe sandbox runs and the local one otherwise. The choice and
	// its reason are logged at start.
	Runtime string
	// SandboxNetwork, if set, is a sandbox's network where the policy grants no other:
	// "none", "loopback" or "host" (serve's --sandbox-network). It overrides
	// Defaults.Network.
	SandboxNetwork string
	// Rootfs is the namespace driver's read-only root: a directory whose top-level
	// entries make up /; "" is a read-only view of the host's /usr, /etc, /opt and
	// their links.
	Rootfs string
	// HoldTimeout is how long a request for a sandbox that has no live owner (its
	// partition is moving after a node died, or its owner's lease lapsed) is held
	// before it is answered 503 with Retry-After. Defaults to 5 s (DefaultHoldTimeout).
	HoldTimeout time.Duration
	// InputTimeout bounds how long input (POST .../input, WebSocket binary frames)
	// waits for a process that does not read it: the POST is then answered 503
	// unavailable, the WebSocket closed with 1013. Defaults to 5 s
	// (runtime.DefaultInputTimeout).
	InputTimeout time.Duration
}

// Server is one gateway node: the HTTP API over a local actor node. Its methods are
// safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	node    *actor.Node
	cluster *cluster.Node // this node's member of the raft cluster
	hooks   *clusterHooks // its lease callbacks
	store   actor.Storage // the actors' storage: replicated records, local node records
	// initLease is the lease the namespace driver's inits hold (watchCluster).
	initLease *runtime.Lease
	driver    runtime.Driver // the sandboxes' runtime driver (chooseDriver)
	tokens    *tokenTable    // this node's and the cluster's API tokens
	secret    []byte         // the cluster secret, for joining nodes
	peers     *http.Client   // membership requests forwarded to the leader
	metrics   *metrics
	wsWatch   *writeWatch     // disconnects WebSocket clients that stopped reading
	wsPumps   atomic.Int64    // WebSocket output goroutines running (see wsAttachment)
	fwd       *forwarder      // forwarding to other nodes (forward.go)
	streams   *streamRegistry // this node's streams by sandbox, ended when it moves
	handoffs  *handoffGate    // the actor's admission: the cluster's, and planned moves
	plugins   *plugins.Host   // nil without a policy plugin
	reloads   chan uint64     // plugin generations put in service, for refreshBudgets
	bg        sync.WaitGroup  // background goroutines, stopped by Shutdown
	mux       *http.ServeMux
	handler   http.Handler // mux, behind the check for paths not in canonical form
	routes    []route
	started   time.Time
	// tempSweeps holds a *sync.Once per sandbox whose workspace had its stale
	// temporary files removed (see openWorkspace).
	tempSweeps sync.Map

	// streamCtx is cancelled by Shutdown so SSE and WebSocket streams end.
	streamCtx    context.Context
	cancelStream context.CancelFunc

	mu         sync.Mutex
	httpSrv    *http.Server
	metricsSrv *http.Server // ServeMetrics's, if it runs
	listenAddr string       // the listener's address once Serve runs (ports of 0 resolved)
	closed     bool
}

// New opens the node's storage and actor system and builds the HTTP handler.
//
// Lifecycle:
//  1. New validates cfg, opens storage and the actor node.
//  2. Serve answers requests on a listener (or use Handler with your own server).
//  3. Shutdown stops accepting, ends streams, waits for requests, ends every process
//     tree and closes storage.
func New(ctx context.Context, cfg *Config) (*Server, error) {
	c, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	if c.NodeID == "" {
		if c.NodeID, err = loadOrCreateNodeID(c.DataDir); err != nil {
			return nil, err
		}
	}
	reloads := make(chan uint64, 1)
	host, err := openPolicy(ctx, &c, reloads)
	if err != nil {
		return nil, err
	}
	initLease := runtime.NewLease()
	driver, err := chooseDriver(ctx, &c, initLease)
	if err != nil {
		if host != nil {
			_ = host.Close()
		}
		return nil, err
	}
	tokens := newTokenTable(c.Tokens)
	hooks := newClusterHooks(c.Logger, tokens)
	cn, secret, err := startCluster(ctx, &c, hooks)
	if err == nil {
		err = publishTokens(ctx, &c, cn, tokens)
		if err != nil {
			_ = cn.Close()
		}
	}
	if err != nil {
		if host != nil {
			_ = host.Close()
		}
		return nil, err
	}
	store, err := openActorStorage(ctx, &c, cn)
	if err != nil {
		_ = cn.Close()
		if host != nil {
			_ = host.Close()
		}
		return nil, err
	}
	gate := newHandoffGate(cn, leaseOrDefault(c.LeaseTTL)) // the cluster's admission, and planned moves (cluster_handoff.go)
	node, err := actor.Open(ctx, &actor.Config{
		Storage:   store,
		Admission: gate.admit,
		Epoch:     gate.epoch,
		Driver:    driver,
		NodeID:    c.NodeID,
		DataDir:   c.DataDir,
		Policy:    c.Budgets,
		Defaults:  c.Defaults,
		Limits:    c.Limits,
		Logger:    c.Logger,

		DiskImages:            c.DiskImages,
		MaxSandboxesPerTenant: max(c.MaxSandboxesPerTenant, 0), // negative: none, as actor's 0
	})
	if err != nil {
		if host != nil {
			_ = host.Close()
		}
		_ = store.Close()
		_ = cn.Close()
		return nil, fmt.Errorf("failed to open actor node: %w", err)
	}
	s := &Server{
		store:     store,
		initLease: initLease,
		cluster:   cn,
		hooks:     hooks,
		cfg:       c,
		driver:    driver,
		plugins:   host,
		reloads:   reloads,
		log:       c.Logger,
		node:      node,
		tokens:    tokens,
		secret:    secret,
		peers:     &http.Client{Transport: &http.Transport{}, Timeout: peerTimeout},
		metrics:   newMetrics(),
		wsWatch:   newWriteWatch(c.WSWriteTimeout),
		fwd:       newForwarder(c.Logger),
		streams:   newStreamRegistry(),
		handoffs:  gate,
		started:   time.Now(),
	}
	collectors := append(nodeGauges(node.Stats), s.fwd.metrics.collectors()...)
	collectors = append(collectors, clusterGauges(cn)...)
	if host != nil {
		collectors = append(collectors, host)
	}
	if err := s.metrics.register(collectors...); err != nil {
		_ = node.Close(ctx)
		_ = store.Close()
		_ = cn.Close()
		if host != nil {
			_ = host.Close()
		}
		return nil, fmt.Errorf("failed to register metrics: %w", err)
	}
	s.streamCtx, s.cancelStream = context.WithCancel(context.Background())
	s.buildRoutes()
	s.renewInitLease() // before the first request: a sandbox under an expired lease runs nothing
	fence, changed, handOff := s.fence, s.sandboxesChanged, s.handOff
	hooks.onFence.Store(&fence)
	hooks.onHandoff.Store(&handOff)
	hooks.onChange.Store(&changed)
	s.bg.Go(func() { s.wsWatch.run(s.streamCtx) })
	s.bg.Go(func() { s.watchCluster(s.streamCtx, leaseOrDefault(c.LeaseTTL)/6) })
	s.bg.Go(s.watchOwnership)
	if host != nil {
		s.bg.Go(s.refreshBudgets)
	}
	return s, nil
}

func withDefaults(cfg *Config) (Config, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7070"
	}
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	if c.RaftListen == "" {
		c.RaftListen = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.WSWriteTimeout <= 0 {
		c.WSWriteTimeout = defaultWSWriteTimeout
	}
	if c.HoldTimeout <= 0 {
		c.HoldTimeout = DefaultHoldTimeout
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = defaultReadHeaderTimeout
	}
	if c.BodyReadTimeout <= 0 {
		c.BodyReadTimeout = defaultBodyReadTimeout
	}
	if c.ResponseWriteTimeout <= 0 {
		c.ResponseWriteTimeout = defaultResponseWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = defaultMaxHeaderBytes
	}
	c.AllowedOrigins = cleanPatterns(c.AllowedOrigins)
	if c.MaxSandboxesPerTenant == 0 {
		c.MaxSandboxesPerTenant = DefaultMaxSandboxesPerTenant
	}
	for _, p := range c.Tokens {
		if p.Tenant == "" {
			return c, errors.New("gateway: a token has an empty tenant name")
		}
	}
	if n := actor.Network(c.SandboxNetwork); n != "" {
		if !n.Valid() {
			return c, fmt.Errorf("gateway: sandbox network %q is not none, loopback or host", n)
		}
		c.Defaults.Network = n
	}
	var err error
	if c.Defaults, c.Limits, err = actor.OperatorBudgets(c.Defaults, c.Limits); err != nil {
		return c, fmt.Errorf("gateway: invalid operator budgets: %w", err)
	}
	if len(c.Tokens) == 0 && !IsLoopback(c.Listen) {
		return c, fmt.Errorf("gateway: refusing to listen on %s without a token: set --token or --tokens", c.Listen)
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("failed to resolve data dir: %w", err)
	}
	c.DataDir = abs
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return c, fmt.Errorf("failed to create data dir: %w", err)
	}
	return c, nil
}

// IsLoopback reports whether addr (host:port) only accepts local connections, where a
// server may run without a configured token.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns the HTTP handler of the whole API, with the body read deadline of
// Config.BodyReadTimeout. A server of the caller's own should set the other deadlines
// (see Serve).
func (s *Server) Handler() http.Handler { return s.withBodyDeadline(s.handler) }

// Serve answers requests on ln until Shutdown, with the deadlines of Config
// (ReadHeaderTimeout, BodyReadTimeout, IdleTimeout, MaxHeaderBytes). ln's address is
// the server's own for the WebSocket Origin check. It returns http.ErrServerClosed
// after a clean shutdown.
func (s *Server) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.withBodyDeadline(s.handler),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         noDelay,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.httpSrv = srv
	s.listenAddr = ln.Addr().String()
	s.mu.Unlock()
	return srv.Serve(ln)
}

// noDelay turns Nagle's algorithm off on every accepted connection: interactive
// terminals send small frames that must not wait for an ACK. Go sets TCP_NODELAY by
// default, so this only guards against a listener that did not.
func noDelay(c net.Conn, state http.ConnState) {
	if state != http.StateNew {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}

// Shutdown stops the server:
//  1. It stops accepting and ends SSE and WebSocket streams.
//  2. It waits for in-flight requests and stream goroutines, up to ShutdownGrace (or
//     ctx); past it, it closes the remaining connections and goes on regardless.
//  3. It ends every process tree and closes storage: requests still stuck on a
//     process (input it does not read) return once their process is gone, and
//     Shutdown waits for them within ctx.
//
// Calling it again is a no-op.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv := s.httpSrv
	s.mu.Unlock()

	var errs []error
	s.cancelStream()
	gctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownGrace)
	defer cancel()
	s.shutdownMetrics(gctx)
	if srv != nil {
		if err := srv.Shutdown(gctx); err != nil {
			s.log.Warn("requests still running after the shutdown grace; ending them", "err", err)
			_ = srv.Close()
		}
	}
	bgDone := make(chan struct{})
	go func() { s.bg.Wait(); close(bgDone) }()
	select {
	case <-bgDone:
	case <-gctx.Done():
		s.log.Warn("streams still running after the shutdown grace; ending their processes")
	}
	s.fwd.close()
	if err := s.node.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("failed to close actor node: %w", err))
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("failed to close storage: %w", err))
	}
	s.peers.CloseIdleConnections()
	if err := s.cluster.Close(); err != nil {
		errs = append(errs, fmt.Errorf("failed to close cluster node: %w", err))
	}
	select {
	case <-bgDone:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("failed to stop streams: %w", ctx.Err()))
	}
	if s.plugins != nil {
		if err := s.plugins.Close(); err != nil {
			errs = append(errs, fmt.Errorf("failed to close policy plugin: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Abort ends every process tree the server started at once, with SIGKILL, for a forced
// exit that cannot wait for Shutdown, and detaches the workspace images (each is
// released once its killed processes are gone). Nothing is closed or flushed: the
// caller exits next (the actors' storage and the images survive a crash).
func (s *Server) Abort() {
	runtime.KillAll()
	s.node.DetachImages()
}

// openPolicy starts the Wasm policy host when c names a plugin file, and points the
// routing and budget policies at it.
func openPolicy(ctx context.Context, c *Config, reloads chan<- uint64) (*plugins.Host, error) {
	if c.PolicyFile == "" {
		return nil, nil
	}
	host, err := plugins.New(ctx, &plugins.Config{
		Path:          c.PolicyFile,
		PluginConfig:  c.PolicyConfig,
		CacheDir:      filepath.Join(c.DataDir, "plugin-cache"),
		DefaultBudget: toPluginBudget(c.Defaults),
		MaxBudget:     toPluginBudget(c.Limits),
		CallTimeout:   c.PolicyTimeout,
		OnReload: func(gen uint64) {
			select { // a refresh already pending covers this generation too
			case reloads <- gen:
			default:
			}
		},
		Logger: c.Logger.With("component", "policy"),
	})
	if err != nil {
		return nil, fmt.Errorf("failed to load policy plugin: %w", err)
	}
	p := pluginPolicy{host: host}
	c.Policy, c.Budgets = p, p
	return host, nil
}

// ReloadPolicy reloads the policy plugin from its file now (serve calls it on SIGHUP).
// A file that fails to load leaves the running plugin in place and is reported.
func (s *Server) ReloadPolicy(ctx context.Context) error {
	if s.plugins == nil {
		return nil
	}
	return s.plugins.Reload(ctx)
}

// refreshBudgets asks the reloaded plugin for the budget of every sandbox, each time a
// new plugin generation is put in service, until Shutdown.
func (s *Server) refreshBudgets() {
	for {
		select {
		case <-s.streamCtx.Done():
			return
		case gen := <-s.reloads:
			list, err := s.node.ListSandboxes(s.streamCtx, nil)
			if err != nil {
				s.log.Warn("budget refresh after policy reload failed", "generation", gen, "err", err)
				continue
			}
			failed := 0
			for _, sb := range list {
				if _, err := s.node.RefreshBudget(s.streamCtx, sb.ID); err != nil && s.streamCtx.Err() == nil {
					failed++
				}
			}
			s.log.Info("budgets refreshed after policy reload", "generation", gen, "sandboxes", len(list), "failed", failed)
		}
	}
}
