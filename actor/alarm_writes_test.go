package actor

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// countingStore counts durable writes.
type countingStore struct {
	Storage
	writes atomic.Int64
}

func (s *countingStore) Write(ctx context.Context, b *Batch) error {
	s.writes.Add(1)
	return s.Storage.Write(ctx, b)
}

// Requests that only push the idle deadline later must not cost a durable write each:
// the stored alarm may lag behind, since an early wake just re-arms.
func TestActivityDoesNotWriteEachRequest(t *testing.T) {
	t.Parallel()
	var store *countingStore
	n := newTestNode(t, func(c *Config) {
		bolt, err := OpenBolt(filepath.Join(c.DataDir, "counting.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bolt.Close() }) // runs after the node's close: cleanups are LIFO
		store = &countingStore{Storage: bolt}
		c.Storage = store
	})
	mustCreate(t, n, "quiet")
	before := store.writes.Load()
	for i := 0; i < 20; i++ {
		n.clock.Advance(time.Second)
		if _, err := n.Exec(tctx(t), "quiet", runtime.ExecOptions{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.writes.Load() - before; got > 2 {
		t.Fatalf("20 exec calls made %d durable writes, want at most 2", got)
	}
	// The idle TTL still hibernates the sandbox on time, counted from the last request.
	info, err := n.GetSandbox(tctx(t), "quiet")
	must(t, err)
	n.clock.Advance(info.Budget.IdleTTL + time.Second)
	eventually(t, 30*time.Second, "hibernation", func() bool {
		info, err := n.GetSandbox(tctx(t), "quiet")
		return err == nil && info.State == StateHibernated
	})
}
