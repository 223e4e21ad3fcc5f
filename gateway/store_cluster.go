package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// nodeRecordsID is the actor's reserved sandbox id for node-wide records (its running-
// process index and sequence bases). They describe this node only, so they stay in
// a local store and are never replicated: another node taking over a sandbox must
// not inherit this node's process index.
const nodeRecordsID = "_node"

// clusterStore is an actor.Storage on the cluster's replicated store: every sandbox's
// records go through raft (cluster.Node.Write, Read, Sandboxes), fenced by the
// partition epoch the actor stamps on each batch, except the node-wide records,
// which live in a local store.
//
// Errors map to the actor's: cluster.ErrFenced → actor.ErrFenced, cluster.ErrClosed →
// actor.ErrClosed, cluster.ErrInvalid → actor.ErrInvalid, cluster.ErrIndeterminate →
// actor.ErrIndeterminate, each still matching the cluster's error too. After a write
// with an unknown outcome the actor fails the turn, drops the activation and reloads
// on the next one, and the cluster's Read settles the outcome first (it commits an
// empty entry through the leader and waits for this replica to apply it), so the
// reload shows whether the batch landed and nothing is applied twice.
//
// Concurrency: safe for concurrent use, like the cluster node and the local store.
type clusterStore struct {
	n      *cluster.Node
	local  actor.Storage
	closed atomic.Bool
}

var (
	_ actor.Storage      = (*clusterStore)(nil)
	_ actor.SandboxPager = (*clusterStore)(nil)
)

// newClusterStore returns an actor.Storage over n that keeps the node-wide records in
// local. Close closes local, not n: the node has its own lifetime.
func newClusterStore(n *cluster.Node, local actor.Storage) actor.Storage {
	return &clusterStore{n: n, local: local}
}

// Read implements actor.Storage.
func (s *clusterStore) Read(ctx context.Context, sandbox string, fn func(r actor.Reader) error) error {
	if sandbox == nodeRecordsID {
		return s.local.Read(ctx, sandbox, fn)
	}
	if s.closed.Load() {
		return actor.ErrClosed
	}
	return storeErr(s.n.Read(ctx, sandbox, func(r cluster.Reader) error { return fn(r) }))
}

// Write implements actor.Storage.
func (s *clusterStore) Write(ctx context.Context, b *actor.Batch) error {
	if b.Sandbox == nodeRecordsID {
		return s.local.Write(ctx, b)
	}
	if s.closed.Load() {
		return actor.ErrClosed
	}
	cb := &cluster.Batch{Sandbox: b.Sandbox, Epoch: b.Epoch, DeleteSandbox: b.DeleteSandbox, Ops: make([]cluster.Op, len(b.Ops))}
	for i, op := range b.Ops {
		cb.Ops[i] = cluster.Op{Key: op.Key, Value: op.Value, Delete: op.Delete}
	}
	return storeErr(s.n.Write(ctx, cb))
}

// Sandboxes implements actor.Storage: the replicated sandboxes and the local store's
// ids (the node records), merged in id order.
func (s *clusterStore) Sandboxes(ctx context.Context, key []byte, fn func(id string, val []byte) error) error {
	return s.SandboxesAfter(ctx, key, "", fn)
}

// SandboxesAfter implements actor.SandboxPager: Sandboxes from the first id after
// after. The local store holds only the node records, a handful of ids, so they are
// read whole and merged in.
func (s *clusterStore) SandboxesAfter(ctx context.Context, key []byte, after string, fn func(id string, val []byte) error) error {
	if s.closed.Load() {
		return actor.ErrClosed
	}
	type entry struct {
		id  string
		val []byte
	}
	var local []entry
	err := s.local.Sandboxes(ctx, key, func(id string, val []byte) error {
		if id > after {
			local = append(local, entry{id, append([]byte(nil), val...)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = s.n.SandboxesAfter(ctx, key, after, func(id string, val []byte) error {
		for len(local) > 0 && local[0].id < id {
			if err := fn(local[0].id, local[0].val); err != nil {
				return err
			}
			local = local[1:]
		}
		return fn(id, val)
	})
	if err != nil {
		return storeErr(err)
	}
	for _, e := range local {
		if err := fn(e.id, e.val); err != nil {
			return err
		}
	}
	return nil
}

// Close implements actor.Storage: it closes the local store; the cluster node stays
// open. Calls after Close return actor.ErrClosed.
func (s *clusterStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.local.Close()
}

// storeErr maps the cluster's store errors to the actor's, keeping both matchable.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrFenced):
		return fmt.Errorf("%w: %w", actor.ErrFenced, err)
	case errors.Is(err, cluster.ErrClosed):
		return fmt.Errorf("%w: %w", actor.ErrClosed, err)
	case errors.Is(err, cluster.ErrInvalid):
		return fmt.Errorf("%w: %w", actor.ErrInvalid, err)
	case errors.Is(err, cluster.ErrIndeterminate):
		return fmt.Errorf("%w: %w", actor.ErrIndeterminate, err)
	}
	return err
}
