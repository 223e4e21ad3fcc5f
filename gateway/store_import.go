package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// openActorStorage opens the actors' storage: sandbox records in the cluster's
// replicated store, this node's own records in DATA/actors.db, and moves into the
// former what a data directory from before the cluster kept in the latter.
func openActorStorage(ctx context.Context, c *Config, cn *cluster.Node) (actor.Storage, error) {
	local, err := actor.OpenBolt(filepath.Join(c.DataDir, "actors.db"))
	if err != nil {
		return nil, fmt.Errorf("failed to open node storage: %w", err)
	}
	store := newClusterStore(cn, local)
	n, err := importLocalSandboxes(ctx, local, store, cn.Epoch, c.Logger)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	if n > 0 {
		c.Logger.Info("moved sandboxes from the node's local store into the cluster's", "count", n)
	}
	if c.wrapStorage != nil {
		return c.wrapStorage(store), nil
	}
	return store, nil
}

// importLocalSandboxes moves the sandboxes a node kept in its local store (a data
// directory from before the cluster, where DATA/actors.db held every record) into
// the replicated store, so an upgraded `make run` keeps its sandboxes. Each
// sandbox is copied in one batch stamped with the epoch the node owns it at, then
// deleted locally; a crash between the two copies it again next time, which writes
// the same records. A sandbox this node does not own (the write is fenced) stays
// local and is retried at the next start. Node-local records (ids starting with
// "_") are not sandboxes and stay where they are.
func importLocalSandboxes(ctx context.Context, local, replicated actor.Storage, epoch func(string) uint64, log *slog.Logger) (imported int, err error) {
	var ids []string
	err = local.Sandboxes(ctx, nil, func(id string, _ []byte) error {
		if !strings.HasPrefix(id, "_") {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("failed to list local sandboxes: %w", err)
	}
	var kept []string
	for _, id := range ids {
		b := &actor.Batch{Sandbox: id, Epoch: epoch(id), DeleteSandbox: true}
		err := local.Read(ctx, id, func(r actor.Reader) error {
			r.Scan(nil, nil, func(k, v []byte) bool {
				b.Put(append([]byte(nil), k...), append([]byte(nil), v...))
				return true
			})
			return nil
		})
		if err != nil {
			return imported, fmt.Errorf("failed to read local sandbox %q: %w", id, err)
		}
		if err := replicated.Write(ctx, b); err != nil {
			if errors.Is(err, actor.ErrFenced) {
				kept = append(kept, id)
				continue
			}
			return imported, fmt.Errorf("failed to import sandbox %q: %w", id, err)
		}
		if err := local.Write(ctx, &actor.Batch{Sandbox: id, Epoch: b.Epoch, DeleteSandbox: true}); err != nil {
			return imported, fmt.Errorf("failed to drop imported sandbox %q locally: %w", id, err)
		}
		imported++
	}
	if len(kept) > 0 {
		log.Warn("local sandboxes owned by other nodes were not imported; retried at the next start", "count", len(kept), "first", kept[0])
	}
	return imported, nil
}
