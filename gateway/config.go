package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// Config configures a gateway node. The zero value of each field means its default.
type Config struct {
	// Listen is the HTTP address the server binds. Defaults to 127.0.0.1:7070.
	Listen string
	// Advertise is the HTTP host:port (or host, taking Listen's port) other nodes
	// forward requests and stream workspaces to, shown as this node's http_addr.
	// Empty: Listen when its host is specified, else the host's first non-loopback
	// unicast IPv4 (else IPv6) address with Listen's port (cluster.AdvertiseAddr). New
	// fails with ErrAdvertise when there is none or Advertise names 0.0.0.0 or ::.
	Advertise string
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
	// ExitedLimit is how many exited processes' records a sandbox keeps listed; past
	// it the oldest is dropped. SessionLimit and TerminalLimit bound the sessions and
	// terminals a sandbox remembers, dead or stopped ones included: a create under a new
	// id past them is 429 budget_exceeded naming max_sessions or max_terminals. Zero
	// means the default (DefaultExitedLimit, DefaultSessionLimit and
	// DefaultTerminalLimit: 100, 256, 256); a negative value is ErrConfig. Every node of
	// a cluster should be given the same: a sandbox that moves takes what it has, and a
	// smaller bound on its new node only refuses new sessions and terminals (and drops
	// exited records) there.
	ExitedLimit, SessionLimit, TerminalLimit int
	// NodeID names this node. It is kept in DataDir/node-id: left empty it is the kept
	// one, or a random UUID made once; one other than the kept one is ErrConfig. So it
	// is stable across restarts, and distinct for nodes sharing a host.
	NodeID string
	// RaftListen is the host:port of this node's raft transport, which other nodes
	// must reach; port 0 picks a free one. Defaults to 127.0.0.1:0 (serve's flag defaults
	// to 127.0.0.1:7071).
	RaftListen string
	// RaftAdvertise is the raft host:port (or host) other nodes dial, defaulted from
	// RaftListen as Advertise is from Listen (cluster.Config.RaftAdvertise).
	RaftAdvertise string
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
	// DeadServerTimeout is how long a member may be gone (down, silent to the
	// leader) before the leader removes it from the raft configuration, so that a
	// non-voter can take a dead voter's seat (cluster.Config.DeadServerTimeout).
	// Zero means DefaultDeadServerTimeout; negative disables the cleanup.
	DeadServerTimeout time.Duration
	// OrphanPinGrace is how long a pin may exist with no sandbox record under it
	// (a create that failed after placing its sandbox in a pool) before the leader
	// removes it (cluster.Config.OrphanPinGrace). Zero means 1 minute.
	OrphanPinGrace time.Duration
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
	// WorkspaceMoveMax bounds the files of one workspace that a planned move (a drain,
	// a rebalance) streams to the sandbox's new owner; a workspace holding more is not
	// moved, and its sandbox.moved names it lost. Zero means DefaultWorkspaceMoveMax
	// (4 GiB); a negative value streams no workspace.
	WorkspaceMoveMax int64

	// wrapStorage, when set, wraps the actors' storage once it is open (tests: a
	// commit held while a request is under way).
	wrapStorage func(actor.Storage) actor.Storage
	// beforeBatches, when set, is the cluster node's Config.BeforeBatches (tests: a
	// replica held behind the leader).
	beforeBatches func(index uint64)
	// onCatchUp, when set, is called with the sandbox's id once a request has
	// joined a catch-up because this node's replica does not know the sandbox, just
	// before it waits for it (forward_unknown.go; tests: the moment a held replica is
	// let go).
	onCatchUp func(sandbox string)
	// actorConfig, when set, edits the actor node's configuration before it opens
	// (tests: small byte bounds on events and messages).
	actorConfig func(*actor.Config)
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
	if c.WorkspaceMoveMax == 0 {
		c.WorkspaceMoveMax = DefaultWorkspaceMoveMax
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = defaultMaxHeaderBytes
	}
	c.AllowedOrigins = cleanPatterns(c.AllowedOrigins)
	if c.MaxSandboxesPerTenant == 0 {
		c.MaxSandboxesPerTenant = DefaultMaxSandboxesPerTenant
	}
	if c.ExitedLimit < 0 || c.SessionLimit < 0 || c.TerminalLimit < 0 {
		return c, fmt.Errorf("%w: exited-process, session and terminal limits must be 1 or more, not %d, %d and %d",
			ErrConfig, c.ExitedLimit, c.SessionLimit, c.TerminalLimit)
	}
	for _, p := range c.Tokens {
		if p.Tenant == "" {
			return c, fmt.Errorf("%w: a token has an empty tenant name", ErrConfig)
		}
	}
	if n := actor.Network(c.SandboxNetwork); n != "" {
		if !n.Valid() {
			return c, fmt.Errorf("%w: sandbox network %q is not none, loopback or host", ErrConfig, n)
		}
		c.Defaults.Network = n
	}
	var err error
	if c.Defaults, c.Limits, err = actor.OperatorBudgets(c.Defaults, c.Limits); err != nil {
		return c, fmt.Errorf("gateway: invalid operator budgets: %w", err)
	}
	if len(c.Tokens) == 0 && !IsLoopback(c.Listen) {
		return c, fmt.Errorf("%w: refusing to listen on %s without a token: set --token or --tokens", ErrConfig, c.Listen)
	}
	if c.NodeID != "" && !runtime.ValidID(c.NodeID) {
		// Members are addressed by id in the API (DELETE /v1/cluster/members/{id}).
		return c, fmt.Errorf("%w: invalid node id %q: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", ErrConfig, c.NodeID)
	}
	if err := checkLabels(c.Labels); err != nil { // they go into the member table
		return c, fmt.Errorf("%w: node labels: %s", ErrConfig, humanMessage(err))
	}
	if err := c.advertise(); err != nil {
		return c, err
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
