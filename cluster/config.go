package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
)

// Config configures a Node. Open copies it and fills defaults; the caller's value is
// never modified. Start from DefaultConfig or a zero Config.
type Config struct {
	// NodeID is the node's stable id, also its raft server id. Required: the gateway
	// keeps a UUID in its data directory (host names collide when several nodes run
	// on one machine).
	NodeID NodeID
	// DataDir holds the raft log, stable store and snapshots under DataDir/raft.
	// Required.
	DataDir string
	// RaftListen is the host:port the raft TCP transport binds. Port 0 picks a free
	// port; Node.RaftAddr reports the real one. It may be 0.0.0.0 or [::] (all
	// interfaces) when RaftAdvertise, or the host's address, tells peers where to
	// dial. Default "127.0.0.1:0".
	RaftListen string
	// RaftAdvertise is the raft host:port (or host, taking the bound port) other
	// nodes dial, recorded in the raft configuration and the member table. Empty:
	// RaftListen when its host is specified, else the host's first non-loopback
	// unicast address with the bound port (AdvertiseAddr). Open fails with
	// ErrAdvertise when there is none or RaftAdvertise names 0.0.0.0 or ::.
	RaftAdvertise string
	// HTTPAddr is the HTTP host:port recorded in the member table, which other
	// nodes forward requests to: an advertised address, never 0.0.0.0.
	HTTPAddr string
	// Labels are this node's labels, matched by pin selectors.
	Labels map[string]string
	// Secret is the cluster secret, at least MinSecretLen bytes, the same on every
	// node: every connection on the raft listener, raft and heartbeats alike, must
	// prove it knows it (an HMAC-SHA256 challenge-response in both directions) before
	// anything reads it. Required. The gateway makes one at bootstrap, keeps it in
	// its data directory and hands it to joining nodes.
	Secret []byte
	// Join is true when a member will add this node through Node.Join (the gateway's
	// --join). A node with Join set and no raft state waits to be added instead of
	// bootstrapping a cluster of its own. A node with raft state resumes it either way.
	Join bool
	// Multiplier scales the raft timeouts (heartbeat and election 500 ms, leader lease
	// 250 ms, commit 50 ms). Above 1 for slow or noisy hosts; tests use 0.1. Default 1.
	Multiplier float64
	// RebalanceRate bounds how many partitions per second the leader moves to rebalance
	// onto a new member. Partitions that nobody serves move at once regardless.
	// Default 64.
	RebalanceRate int
	// Busy reports that a partition has running work or attached clients; the leader
	// does not move such a partition to rebalance. It is called on the leader's
	// reconcile goroutine, so it must be fast and safe for concurrent use. Nil: nothing
	// is busy.
	Busy func(partition int) bool
	// LeaseTTL is L, the node lease: a node may serve its partitions only until L
	// after it sent its last heartbeat the leader confirmed, and heartbeats go every
	// L/6. It must outlast a leader election (about 1 s at Multiplier 1) so that
	// owners keep serving while a new leader is chosen. Default 3 s.
	LeaseTTL time.Duration
	// LeaseMargin is δ: the leader moves a silent member's partitions only after
	// L + δ without a heartbeat, and a new leader waits L + δ before moving any. It
	// covers clock-rate drift between nodes and scheduling delays. Default 0.5 s.
	LeaseMargin time.Duration
	// DeadServerTimeout is how long a raft server may be gone (a member marked down,
	// silent to the leader) before the leader removes it from the raft configuration
	// and marks it left, so that a dead voter stops counting towards the quorum and a
	// non-voter can take its place (see cleanup.go). A voter is removed only while
	// the voters that remain have a healthy majority and the cluster keeps its voter
	// target with a non-voter promoted in its place. A removed node that comes back
	// must be joined again. Default 10 minutes; negative disables the cleanup.
	DeadServerTimeout time.Duration
	// OrphanPinGrace is how long a pin may stay with no sandbox record ever written
	// under it before the leader removes it (see pinsweep.go): a create that pinned
	// its sandbox to a pool and then failed, or whose client went away, without the
	// gateway removing the pin itself. Default 1 minute: a create writes its record
	// within milliseconds of the pin.
	OrphanPinGrace time.Duration
	// OnFence is called once each time this node's lease lapses: it must stop every
	// actor of this node and end their processes, since its partitions may be given
	// to another node L + δ after its last heartbeat. Admit already refuses
	// everything by then; OnFence is for what runs without asking. OnFence and
	// OnLease run synchronously on one goroutine of the node, alternately, and must
	// not block for long. Nil: nothing is called.
	OnFence func()
	// OnLease is called each time the node obtains a lease after having none,
	// including the first time; see OnFence.
	OnLease func()
	// OnApply, if set, is called after each write of sandbox records to this
	// replica's state file (one or several entries), with the ids of the sandboxes
	// it changed (each once), so the gateway can refresh its indexes. After a
	// snapshot is restored it is called once with nil: any sandbox may have changed
	// (this happens during Open too, when raft restores its latest snapshot). It
	// runs synchronously on the state file's writer goroutine (or, after a restore,
	// raft's FSM goroutine; never two at once) and must not block, nor call the
	// Node's Write or Read.
	OnApply func(sandboxes []string)
	// OnValues is called after the replicated key/value table (Node.SetValues) may
	// have changed on this replica: a committed SetValues that changed something, or
	// a snapshot restored. It runs on raft's apply goroutine, so it must be fast and
	// must not call into raft; read the table with Node.Values. It may run during
	// Open, before Open returns. Nil: nothing is called.
	OnValues func()
	// OnHandoff is called when the leader begins handing partitions of this node to
	// another member (a drain or a rebalance). Admit already refuses their
	// sandboxes, so the gateway holds new requests for them; OnHandoff must stop
	// their actors (closing WebSockets with 1012) and may send their workspaces to
	// h.To, and returns when that is done: the node then reports to the leader, which
	// gives the partitions to h.To at once. Without a report (OnHandoff still
	// running, or the node dead) the leader completes the handoff L + δ after it
	// began. It is called once per handoff, again after a restart while the handoff
	// lasts, on one goroutine of the node, one call at a time; ctx is cancelled by
	// Close. Nil: the node runs nothing it must stop and reports at once.
	OnHandoff func(ctx context.Context, h Handoff)
	// Logger receives the package's logs. Nil: slog.Default().
	Logger *slog.Logger
	// RaftLogOutput receives raft's own logs (hclog text). Nil: os.Stderr.
	RaftLogOutput io.Writer
	// RaftLogLevel is raft's log level ("debug", "info", "warn", "error"). Default
	// "warn".
	RaftLogLevel string
	// BeforeBatches is for tests only (EXPERIMENTAL): when set, raft's FSM goroutine
	// calls it before this replica applies each entry of sandbox records (a Write,
	// or the empty one of a CatchUp), with the entry's raft index, once every entry
	// before it is in the state file, and applies nothing more until it returns.
	// Blocking in it holds this replica behind the leader, entries of every kind
	// after the held one included, as a follower that learns of commits late is:
	// tests of other packages use it to make such a lag happen on demand. A replica
	// held past a table change cannot renew its lease. Nil: no call.
	BeforeBatches func(index uint64)

	// Test hooks. netUp, when set, reports whether the node's network is up; while it
	// returns false no connection is made or accepted (see streamLayer.cut). observe
	// is passed to the FSM. onLead is called when a leadership's liveness record
	// starts, with its start time; onFloor when it counts a member's silence from
	// that member's last lease entry instead (leaderlease.go).
	netUp   func() bool
	observe func(*state)
	onLead  func(since time.Duration)
	onFloor func(id NodeID, at time.Duration)
	// netTo, when set (tests), reports whether this node may dial addr: a one-sided
	// block, for asymmetric partitions (see streamLayer.Dial).
	netTo func(addr string) bool
	// raftConf, when set, adjusts raft's config before the node starts raft (tests
	// shorten TrailingLogs to make a leader send a snapshot).
	raftConf func(*raft.Config)
	// boltLog keeps the raft log in bbolt (raft.db) instead of the WAL: benchmarks
	// compare the two stores with it.
	boltLog bool
}

// Defaults for Config fields.
const (
	DefaultRaftListen    = "127.0.0.1:0"
	DefaultRebalanceRate = 64
	DefaultLeaseTTL      = 3 * time.Second
	DefaultLeaseMargin   = 500 * time.Millisecond
	// DefaultDeadServerTimeout is Config.DeadServerTimeout's default.
	DefaultDeadServerTimeout = 10 * time.Minute
	// DefaultOrphanPinGrace is Config.OrphanPinGrace's default.
	DefaultOrphanPinGrace = time.Minute
)

// Base raft timeouts, multiplied by Config.Multiplier. Elections take about 0.9 s at
// these values on a LAN; the 200 ms profile halves that but raises spurious elections
// on small or loaded hosts.
const (
	baseHeartbeat   = 500 * time.Millisecond
	baseElection    = 500 * time.Millisecond
	baseLeaderLease = 250 * time.Millisecond
	baseCommit      = 50 * time.Millisecond
)

// DefaultConfig returns a Config with every default filled except NodeID, DataDir and
// Secret.
func DefaultConfig() *Config {
	return &Config{
		RaftListen:    DefaultRaftListen,
		Multiplier:    1,
		RebalanceRate: DefaultRebalanceRate,
		LeaseTTL:      DefaultLeaseTTL,
		LeaseMargin:   DefaultLeaseMargin,
		RaftLogLevel:  "warn",

		DeadServerTimeout: DefaultDeadServerTimeout,
		OrphanPinGrace:    DefaultOrphanPinGrace,
	}
}

func (c *Config) withDefaults() (Config, error) {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.NodeID == "" {
		return cfg, fmt.Errorf("%w: Config.NodeID is required", ErrInvalid)
	}
	if cfg.DataDir == "" {
		return cfg, fmt.Errorf("%w: Config.DataDir is required", ErrInvalid)
	}
	if len(cfg.Secret) < MinSecretLen {
		return cfg, fmt.Errorf("%w: Config.Secret has %d bytes, needs at least %d", ErrInvalid, len(cfg.Secret), MinSecretLen)
	}
	cfg.Secret = append([]byte(nil), cfg.Secret...)
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return cfg, fmt.Errorf("%w: Config.DataDir: %v", ErrInvalid, err)
	}
	cfg.DataDir = dir
	if cfg.RaftListen == "" {
		cfg.RaftListen = DefaultRaftListen
	}
	if cfg.Multiplier < 0 {
		return cfg, fmt.Errorf("%w: Config.Multiplier %v is negative", ErrInvalid, cfg.Multiplier)
	}
	if cfg.Multiplier == 0 {
		cfg.Multiplier = 1
	}
	if cfg.RebalanceRate <= 0 {
		cfg.RebalanceRate = DefaultRebalanceRate
	}
	if cfg.LeaseTTL < 0 || cfg.LeaseMargin < 0 {
		return cfg, fmt.Errorf("%w: Config.LeaseTTL %v or LeaseMargin %v is negative", ErrInvalid, cfg.LeaseTTL, cfg.LeaseMargin)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseMargin == 0 {
		cfg.LeaseMargin = DefaultLeaseMargin
	}
	if cfg.DeadServerTimeout == 0 {
		cfg.DeadServerTimeout = DefaultDeadServerTimeout
	}
	if cfg.OrphanPinGrace <= 0 {
		cfg.OrphanPinGrace = DefaultOrphanPinGrace
	}
	if cfg.LeaseTTL < 6*time.Millisecond {
		return cfg, fmt.Errorf("%w: Config.LeaseTTL %v is too short", ErrInvalid, cfg.LeaseTTL)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RaftLogOutput == nil {
		cfg.RaftLogOutput = os.Stderr
	}
	if cfg.RaftLogLevel == "" {
		cfg.RaftLogLevel = "warn"
	}
	labels := make(map[string]string, len(cfg.Labels))
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	cfg.Labels = labels
	return cfg, nil
}

func (c *Config) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.Multiplier)
}
