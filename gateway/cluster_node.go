package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// DefaultDeadServerTimeout is Config.DeadServerTimeout's default: 10 minutes.
const DefaultDeadServerTimeout = cluster.DefaultDeadServerTimeout

// clusterReadyTimeout bounds how long New waits for a bootstrapping or resuming node
// to elect itself, place the partitions and hold its first lease.
const clusterReadyTimeout = 60 * time.Second

// openCluster starts this node's member of the raft cluster with the cluster secret.
// A node without Config.Join bootstraps a single-node cluster (or resumes the one in
// its data directory): `make run` and every node of N run the same code. The node's
// lease and value hooks are wired to the server through hooks, set once the server
// exists.
func openCluster(ctx context.Context, c *Config, hooks *clusterHooks, secret []byte) (*cluster.Node, error) {
	raftOut := io.Discard
	if c.RaftLog != nil {
		raftOut = c.RaftLog
	}
	n, err := cluster.Open(ctx, &cluster.Config{
		NodeID:            cluster.NodeID(c.NodeID),
		DataDir:           c.DataDir,
		RaftListen:        c.RaftListen,
		RaftAdvertise:     c.RaftAdvertise,
		HTTPAddr:          c.Advertise,
		Labels:            c.Labels,
		Secret:            secret,
		Join:              hooks.joining,
		Multiplier:        c.RaftMultiplier,
		LeaseTTL:          c.LeaseTTL,
		RebalanceRate:     c.RebalanceRate,
		DeadServerTimeout: c.DeadServerTimeout,
		OrphanPinGrace:    c.OrphanPinGrace,
		OnFence:           hooks.fence,
		OnLease:           hooks.leased,
		OnHandoff:         hooks.handOff,
		Busy:              hooks.busyPartition,
		OnApply:           hooks.applied,
		OnValues:          hooks.values,
		Logger:            c.Logger.With("component", "cluster"),
		RaftLogOutput:     raftOut,
		BeforeBatches:     c.beforeBatches,
	})
	if err != nil {
		return nil, err
	}
	hooks.node.Store(n)
	hooks.values() // what was restored before the pointer was set
	return n, nil
}

// waitClusterReady waits until the node holds a lease and, unless it is joining,
// every partition has an owner, so the first request of a fresh `make run` is served
// rather than held. A joining node gets partitions by the rate-limited rebalance, so
// its lease is enough.
func waitClusterReady(ctx context.Context, n *cluster.Node, hooks *clusterHooks) error {
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()
	select {
	case <-hooks.firstLease:
	case <-ctx.Done():
		return fmt.Errorf("no cluster lease within %v: %w", clusterReadyTimeout, ctx.Err())
	}
	if hooks.joining {
		return nil
	}
	// Placement follows the lease by a commit or two; it has no event of its own.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for last := cluster.Partitions - 1; ; {
		if n.Partition(0).State == cluster.PartitionActive && n.Partition(last).State == cluster.PartitionActive {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("partitions not placed within %v: %w", clusterReadyTimeout, ctx.Err())
		}
	}
}

// clusterHooks carries the cluster node's lease callbacks to the server, which is
// built after the node opens. The callbacks run on one goroutine of the cluster
// node, alternately.
type clusterHooks struct {
	log        *slog.Logger
	joining    bool          // the node asks a member to add it (Config.Join, no raft state)
	firstLease chan struct{} // closed on the first lease
	gotLease   bool
	onFence    atomic.Pointer[func()]       // set once the server exists; nil before
	tokens     *tokenTable                  // refreshed when the replicated values change
	node       atomic.Pointer[cluster.Node] // set once Open returns; nil before
	// busy holds the partitions with busy sandboxes, written by the server every
	// tick (watchCluster) and read by the leader's reconcile goroutine.
	busy atomic.Pointer[map[int]bool]
	// onChange receives the sandboxes other nodes wrote (nil: any may have changed);
	// set once the actor node exists, which reads everything when it opens.
	onChange atomic.Pointer[func([]string)]
	// onHandoff ends this node's activations of partitions handed to another
	// member; set once the server exists (before, nothing runs here to end).
	onHandoff atomic.Pointer[func(context.Context, cluster.Handoff)]
}

// applied is cluster.Config.OnApply. It runs on the state file's writer goroutine
// (or raft's FSM goroutine after a restore) and must not block, so the work is
// handed on.
func (h *clusterHooks) applied(ids []string) {
	if f := h.onChange.Load(); f != nil {
		(*f)(ids)
	}
}

func newClusterHooks(log *slog.Logger, tokens *tokenTable) *clusterHooks {
	return &clusterHooks{log: log, tokens: tokens, firstLease: make(chan struct{})}
}

// values rebuilds the token table from the cluster's replicated one (OnValues).
func (h *clusterHooks) values() {
	if n := h.node.Load(); n != nil {
		h.tokens.refresh(n.Values(tokenKeyPrefix))
	}
}

func (h *clusterHooks) leased() {
	if !h.gotLease {
		h.gotLease = true
		close(h.firstLease)
		return
	}
	h.log.Info("cluster lease regained: this node serves its sandboxes again")
}

// handOff is cluster.Config.OnHandoff: it runs on the cluster node's handoff
// goroutine, one handoff at a time, and returns once the server has ended what it
// ran of them (Server.handOff).
func (h *clusterHooks) handOff(ctx context.Context, ho cluster.Handoff) {
	if f := h.onHandoff.Load(); f != nil {
		(*f)(ctx, ho)
	}
}

func (h *clusterHooks) fence() {
	h.log.Warn("cluster lease lapsed: this node stops its sandboxes until it is renewed")
	if f := h.onFence.Load(); f != nil {
		(*f)()
	}
}
