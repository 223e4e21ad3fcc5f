package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Node is one member of the cluster: a raft server, its replica of the tables, its
// lease with the heartbeat loop that renews it, and, while it leads, the reconcile
// loop that registers members, fails silent ones and places partitions.
//
// Concurrency: every method is safe for concurrent use. Owner, Admit, Epoch, Lease
// and the other getters read the latest applied table and the lease without locks. Leader-only methods block until their
// raft entry commits, or fail with a *NotLeaderError.
type Node struct {
	cfg    Config
	log    *slog.Logger
	raft   *raft.Raft
	trans  *raft.NetworkTransport
	stream *streamLayer
	store  raftStore
	fsm    *fsm
	// commits queues this node's Writes for the committer (store_commit.go); rpcs
	// pools its batch connections to the leader (store_rpc.go).
	commits *committer
	rpcs    rpcPool
	reads   rpcPool // connections to the leader for read indexes (readindex.go)

	ctx    context.Context // the node's lifetime; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// verifying tracks the verification loop and its VerifyLeader calls, which Close
	// waits for before it shuts raft down (see verifyRound).
	verifying sync.WaitGroup
	// leading tracks watchLeadership and the leader's loop under it, which Close also
	// waits for before it shuts raft down: raft never answers an Apply or Barrier
	// future whose committed entry is still queued for the FSM when it shuts down
	// (its FSM goroutine exits without draining the queue, and those futures do not
	// watch shutdown), so a lead loop waiting on one would block Close forever.
	leading sync.WaitGroup
	// raftDown is closed when Close begins raft's shutdown; futureError stops
	// waiting for an answer then.
	raftDown chan struct{}
	kick     chan struct{} // wakes the leader's reconcile loop

	now      func() time.Duration // the monotonic clock (mono)
	lease    lease
	closed   atomic.Bool // set first thing in Close; Admit refuses after it
	hbPaused atomic.Bool // test hook: the heartbeat loop sends nothing while set
	live     liveness
	ver      verifier
	// deadKept counts the leader's passes that kept a dead voter for want of a
	// non-voter to replace it (cleanup.go); tests wait on it.
	deadKept atomic.Int64
	// deadAfter is Config.DeadServerTimeout; tests shorten it once their cluster
	// has formed, so that a node slowed down while joining is not removed.
	deadAfter atomic.Int64
	// sweepOff, set by tests, stops the orphan-pin sweep (pinsweep.go).
	sweepOff atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Open starts a node.
//
//  1. It opens (or creates) the raft log and stable store in DataDir/raft/wal
//     (migrating the bbolt DataDir/raft/raft.db of an older build), the sandbox
//     records in DataDir/raft/state.db and the snapshot store beside them, and
//     listens on RaftListen.
//  2. With no raft state and Join unset it bootstraps a one-voter cluster of itself;
//     with state it resumes the cluster it was in; with Join set it waits to be added.
//  3. Whenever it becomes leader it registers itself in the member table, promotes
//     non-voters up to the voter target and places partitions (see Node.Join).
//
// ctx bounds nothing after Open returns; the node lives until Close.
func Open(ctx context.Context, cfg *Config) (*Node, error) {
	n, err := open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to open cluster node: %w", err)
	}
	return n, nil
}

func open(ctx context.Context, c *Config) (_ *Node, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	hlog := hclog.New(&hclog.LoggerOptions{
		Name: "raft", Output: cfg.RaftLogOutput, Level: hclog.LevelFromString(cfg.RaftLogLevel),
	})
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	store, err := openRaftStore(dir, cfg.Logger, cfg.boltLog)
	if err != nil {
		return nil, err
	}
	closers = append(closers, store.Close)
	logs, err := raft.NewLogCache(512, store)
	if err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hlog)
	if err != nil {
		return nil, err
	}
	if err := dropLogBelowSnapshot(store, snaps, cfg.Logger); err != nil {
		return nil, err
	}
	stream, err := listen(cfg.RaftListen, cfg.RaftAdvertise, cfg.netUp, newAuthenticator(cfg.Secret, cfg.Logger))
	if err != nil {
		return nil, err
	}
	stream.to = cfg.netTo
	closers = append(closers, stream.Close)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog,
	})
	closers = append(closers, trans.Close)

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.scaled(baseHeartbeat)
	rc.ElectionTimeout = cfg.scaled(baseElection)
	rc.LeaderLeaseTimeout = cfg.scaled(baseLeaderLease)
	rc.CommitTimeout = cfg.scaled(baseCommit)
	rc.Logger = hlog
	// A removed leader steps down and stays a follower outside the configuration (it
	// starts no elections) until Close, rather than shutting raft down by itself:
	// raft leaves a VerifyLeader in flight unanswered when it shuts down.
	rc.ShutdownOnRemove = false
	notify := make(chan bool, 16)
	rc.NotifyCh = notify
	if cfg.raftConf != nil {
		cfg.raftConf(rc)
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	has, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		return nil, err
	}
	sdb, err := openStateDB(filepath.Join(dir, "state.db"))
	if err != nil {
		return nil, err
	}
	closers = append(closers, sdb.close)
	f := newFSM(cfg.Logger, sdb)
	f.observe = cfg.observe
	f.onApply = cfg.OnApply
	f.beforeBatches = cfg.BeforeBatches
	f.onValues = cfg.OnValues
	r, err := raft.NewRaft(rc, f, logs, store, snaps, trans)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { return r.Shutdown().Error() })
	if !has && !cfg.Join {
		boot := raft.Configuration{Servers: []raft.Server{{
			Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr(),
		}}}
		if err := r.BootstrapCluster(boot).Error(); err != nil {
			return nil, fmt.Errorf("failed to bootstrap: %w", err)
		}
	}
	n := &Node{
		cfg: cfg, log: cfg.Logger, raft: r, trans: trans, stream: stream, store: store, fsm: f,
		commits: newCommitter(), kick: make(chan struct{}, 1), raftDown: make(chan struct{}), now: mono,
		lease: lease{renewed: make(chan struct{}, 1)},
		ver:   verifier{wake: make(chan struct{}, 1)},
	}
	n.deadAfter.Store(int64(cfg.DeadServerTimeout))
	n.ctx, n.cancel = context.WithCancel(context.Background())
	stream.serve(map[byte]func(net.Conn){
		streamHeartbeat: n.serveHeartbeats,
		streamBatch:     n.serveBatches,
		streamHandoff:   n.serveHandoffReport,
		streamReadIndex: n.serveReadIndex,
	})
	n.wg.Add(4)
	n.verifying.Add(1)
	n.leading.Add(1)
	go n.watchLeadership(notify)
	go n.verifyLoop()
	go n.heartbeat()
	go n.fence()
	go n.commitLoop()
	go n.notifyHandoffs()
	return n, nil
}

// Close leaves raft running nowhere: it makes Admit refuse everything, stops the
// heartbeats and the reconcile loop, shuts raft down and waits for it, then closes
// the transport and the store. It does not call OnFence (the caller is stopping
// everything anyway) and does not remove the node from the cluster (see Remove); the
// others fail it once its lease has run out. Calling Close again returns the first
// result.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		n.cancel()
		n.verifying.Wait() // raft answers verifications only while it runs
		n.leading.Wait()   // and applies and barriers (see Node.leading)
		shutdown := n.raft.Shutdown()
		close(n.raftDown)
		err := shutdown.Error()
		n.wg.Wait()
		err = errors.Join(err, n.trans.Close(), n.stream.Close(), n.store.Close(), n.fsm.db.close())
		if err != nil {
			n.closeErr = fmt.Errorf("failed to close cluster node: %w", err)
		}
	})
	return n.closeErr
}

// ID returns the node's id.
func (n *Node) ID() NodeID { return n.cfg.NodeID }

// RaftAddr returns the raft address this node advertises to its peers
// (Config.RaftAdvertise, with the real port when RaftListen asked for port 0).
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// Self returns this node's member record as Join expects it.
func (n *Node) Self() Member {
	return Member{ID: n.cfg.NodeID, RaftAddr: n.RaftAddr(), HTTPAddr: n.cfg.HTTPAddr, Labels: copyLabels(n.cfg.Labels)}
}

// Owner returns the node that owns a sandbox, the epoch of that ownership, and whether
// the sandbox currently has an owner at all (not while its partition is in handoff:
// then owner is the old owner and ok is false). It reads this node's replica with no
// lock and no allocation, so a follower may briefly see an older owner; the owner
// re-checks and the epoch fences stale writes.
func (n *Node) Owner(sandboxID string) (owner NodeID, epoch uint64, ok bool) {
	return n.fsm.cur.Load().owner(sandboxID)
}

// Partition returns the assignment of partition p (0 <= p < Partitions).
func (n *Node) Partition(p int) Assignment { return n.fsm.cur.Load().parts[p] }

// PinOf returns the pin of sandboxID and true when it is pinned in this node's
// table. It takes no lock.
func (n *Node) PinOf(sandboxID string) (Assignment, bool) {
	p, ok := n.fsm.cur.Load().pins[sandboxID]
	return p.Assignment, ok
}

// Placement returns the assignment that places sandboxID: its pin's when it is
// pinned, else its partition's. It takes no lock.
func (n *Node) Placement(sandboxID string) Assignment {
	s := n.fsm.cur.Load()
	if p, ok := s.pins[sandboxID]; ok {
		return p.Assignment
	}
	return s.parts[PartitionOf(sandboxID)]
}

// Table returns a copy of the whole partition table.
func (n *Node) Table() []Assignment {
	return append([]Assignment(nil), n.fsm.cur.Load().parts...)
}

// Members returns the member table, ordered by id.
func (n *Node) Members() []Member {
	s := n.fsm.cur.Load()
	out := make([]Member, 0, len(s.members))
	for _, m := range s.members {
		m.Labels = copyLabels(m.Labels) // the state is shared and immutable
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func copyLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Leader returns the current leader's id and raft address, empty when none is known.
func (n *Node) Leader() (NodeID, string) {
	addr, id := n.raft.LeaderWithID()
	return NodeID(id), string(addr)
}

// Term returns the raft term this node is in.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// IsLeader reports whether this node is the raft leader right now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// AppliedIndex returns the index of the last log entry applied to this replica. A
// node told of a newer index (a 421 from an owner) can wait until it catches up.
func (n *Node) AppliedIndex() uint64 { return n.raft.AppliedIndex() }

// Err returns the error that stopped this replica applying the log (a non-ignorable
// command it does not know), or nil.
func (n *Node) Err() error { return n.fsm.err() }

// notLeader builds the error for a leader-only call made on a follower.
func (n *Node) notLeader() error {
	id, addr := n.Leader()
	e := &NotLeaderError{LeaderID: id, RaftAddr: addr}
	if m, ok := n.fsm.cur.Load().members[id]; ok {
		e.HTTPAddr = m.HTTPAddr
	}
	return e
}

// apply commits one command and returns the FSM's verdict on it.
func (n *Node) apply(ctx context.Context, cmd []byte) error {
	if n.ctx.Err() != nil {
		return ErrClosed
	}
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	f := n.raft.Apply(cmd, enqueueTimeout(ctx))
	if err := n.wait(ctx, f); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// wait blocks on a raft future, mapping raft's errors to ours. Raft completes a
// future on commit or on loss of leadership, and futureError stops waiting when
// the node shuts raft down, so the wait is bounded.
func (n *Node) wait(ctx context.Context, f raft.Future) error {
	err := n.futureError(f)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w (%v)", n.notLeader(), err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrEnqueueTimeout) && ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// enqueueTimeout is how long raft may wait to accept an entry: until ctx's deadline,
// or 10 s without one.
func enqueueTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 {
			return d
		}
		return time.Millisecond
	}
	return 10 * time.Second
}
