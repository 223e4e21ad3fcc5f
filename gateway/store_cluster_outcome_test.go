package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// TestStoreErrUnknownOutcome: the cluster's unknown outcome reaches the actor as its
// own ErrIndeterminate, still matching the cluster's.
func TestStoreErrUnknownOutcome(t *testing.T) {
	t.Parallel()
	err := storeErr(fmt.Errorf("%w: leadership lost while committing log", cluster.ErrIndeterminate))
	for _, want := range []error{actor.ErrIndeterminate, cluster.ErrIndeterminate} {
		if !errors.Is(err, want) {
			t.Errorf("mapped %v, want it to match %v", err, want)
		}
	}
}

// unknownOnce is the cluster store with one write made to end as a leader lost while
// committing it ends: applied anyway or never applied, with the cluster's error.
type unknownOnce struct {
	actor.Storage
	mu      sync.Mutex
	sandbox string
	apply   bool
}

func (s *unknownOnce) Write(ctx context.Context, b *actor.Batch) error {
	s.mu.Lock()
	hit := s.sandbox != "" && s.sandbox == b.Sandbox
	if hit {
		s.sandbox = ""
	}
	s.mu.Unlock()
	if !hit {
		return s.Storage.Write(ctx, b)
	}
	if s.apply {
		if err := s.Storage.Write(ctx, b); err != nil {
			return err
		}
	}
	return storeErr(fmt.Errorf("%w: leadership lost while committing log", cluster.ErrIndeterminate))
}

// TestClusterStoreUnknownOutcomeCreate runs an actor node on the replicated store, as
// a server does, and makes a create's commit end with an unknown outcome (applied
// anyway, never applied). The retry of the create succeeds, and then the sandbox is
// where every later request looks for it: in the owner index, which the server
// checks before it routes a request to the sandbox (a miss is 404), and in a get.
// Before the fix, the retry of a create that had landed answered "exists" while the
// index never got the sandbox: 2xx, then 404.
func TestClusterStoreUnknownOutcomeCreate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		apply bool
	}{
		{name: "applied anyway", apply: true},
		{name: "never applied", apply: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cn, s, _ := openClusterStore(t)
			store := &unknownOnce{Storage: s, sandbox: "wsi-23", apply: tc.apply}
			node, err := actor.Open(context.Background(), &actor.Config{
				Storage: store, Epoch: cn.Epoch, NodeID: "g1", DataDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			mustOK(t, err)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := node.Close(ctx); err != nil {
					t.Error(err)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			spec := actor.SandboxSpec{ID: "wsi-23"}
			_, _, err = node.CreateSandbox(ctx, spec)
			if !errors.Is(err, actor.ErrUnavailable) || !errors.Is(err, cluster.ErrIndeterminate) {
				t.Fatalf("create with an unknown outcome: %v, want unavailable", err)
			}
			// The client's retry, at once: served by a fresh activation.
			_, created, err := node.CreateSandbox(ctx, spec)
			mustOK(t, err)
			if created == tc.apply {
				t.Fatalf("the retry answered created=%v after a first attempt that applied=%v", created, tc.apply)
			}
			if tenant, ok := node.SandboxTenant("wsi-23"); !ok || tenant != actor.DefaultTenant {
				t.Fatalf("after the retry's 2xx the owner index has %q %v: the next request would be 404", tenant, ok)
			}
			if _, err := node.GetSandbox(ctx, "wsi-23"); err != nil {
				t.Fatalf("get after the retry: %v", err)
			}
			var stored bool
			mustOK(t, s.Read(ctx, "wsi-23", func(r actor.Reader) error { stored = r.Get([]byte("m")) != nil; return nil }))
			if !stored {
				t.Fatal("the replicated store has no record of a sandbox whose create was acknowledged")
			}
		})
	}
}
