package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/runtime"
)

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
	tickets   *ticketStore    // OpenCode connect tickets of this node's sandboxes
	handoffs  *handoffGate    // the actor's admission: the cluster's, and planned moves
	catchUps  catchUpGroup    // catch-ups before serving unknown sandboxes (forward_unknown.go)
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
	// moveBodyHook wraps the workspace streams this node sends (tests).
	moveBodyHook moveBodyHook
	// moves runs the workspace streams of planned moves from this node.
	moves moveRunner

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
	if c.NodeID, err = nodeIDFor(c.DataDir, c.NodeID); err != nil {
		return nil, err
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
		logAdvertise(&c, cn)
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
	acfg := &actor.Config{
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
		SharedWorkspaces:      c.WorkspaceMoveMax < 0,          // nodes that share the directory stream nothing
		MaxSandboxesPerTenant: max(c.MaxSandboxesPerTenant, 0), // negative: none, as actor's 0
		ExitedLimit:           c.ExitedLimit,                   // zero: actor's defaults
		SessionLimit:          c.SessionLimit,
		TerminalLimit:         c.TerminalLimit,
	}
	if c.actorConfig != nil {
		c.actorConfig(acfg)
	}
	node, err := actor.Open(ctx, acfg)
	if err != nil {
		if host != nil {
			_ = host.Close()
		}
		_ = store.Close()
		_ = cn.Close()
		return nil, fmt.Errorf("failed to open actor node: %w", err)
	}
	isActive := node.IsActive
	gate.isActive.Store(&isActive)
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
		tickets:   newTicketStore(),
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
	gate.alive = memberUp(cn)
	s.buildRoutes()
	s.renewInitLease() // before the first request: a sandbox under an expired lease runs nothing
	fence, changed, handOff := s.fence, s.sandboxesChanged, s.handOff
	hooks.onFence.Store(&fence)
	hooks.onHandoff.Store(&handOff)
	hooks.onChange.Store(&changed)
	s.bg.Go(func() { s.wsWatch.run(s.streamCtx) })
	s.bg.Go(func() { s.watchCluster(s.streamCtx, leaseOrDefault(c.LeaseTTL)/6) })
	s.bg.Go(s.watchOwnership)
	if c.WorkspaceMoveMax >= 0 {
		s.bg.Go(func() { s.sweepWorkspaces(s.streamCtx) }) // what earlier moves left here (workspace_cleanup.go)
	}
	if host != nil {
		s.bg.Go(s.refreshBudgets)
	}
	return s, nil
}

// Handler returns the HTTP handler of the whole API, with the body read deadline of
// Config.BodyReadTimeout and Config.MaxHeaderBytes' check (withHeaderLimit). A server of the caller's own should set the other deadlines
// (see Serve).
func (s *Server) Handler() http.Handler { return s.withHeaderLimit(s.withBodyDeadline(s.handler)) }

// Serve answers requests on ln until Shutdown, with the deadlines of Config
// (ReadHeaderTimeout, BodyReadTimeout, IdleTimeout, MaxHeaderBytes). ln's address is
// the server's own for the WebSocket Origin check. It returns http.ErrServerClosed
// after a clean shutdown.
func (s *Server) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    headerReadFactor * s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         noDelay,
		ConnContext:       withConn,
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
	s.moves.close() // cancelled with the streams' context, before the node closes
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
			// One sandbox at a time, as the list is read: never the whole list held.
			listed, failed := 0, 0
			err := s.node.EachSandbox(s.streamCtx, nil, func(sb actor.SandboxInfo) error {
				listed++
				if _, err := s.node.RefreshBudget(s.streamCtx, sb.ID); err != nil && s.streamCtx.Err() == nil {
					failed++
				}
				return nil
			})
			if err != nil {
				s.log.Warn("budget refresh after policy reload failed", "generation", gen, "sandboxes", listed, "err", err)
				continue
			}
			s.log.Info("budgets refreshed after policy reload", "generation", gen, "sandboxes", listed, "failed", failed)
		}
	}
}
