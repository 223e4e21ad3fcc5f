package plugins_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
	"github.com/sandgate/sandgate/plugins"
)

// TestReloadUnderLoad swaps the module 20 times while callers hammer it: no call may
// fail, and every old runtime must be closed once its calls are done.
func TestReloadUnderLoad(t *testing.T) {
	t.Parallel()
	files := []string{plugin(t, "echo"), plugin(t, "bad")}
	path := copyTo(t, files[0])
	var reloaded atomic.Uint64
	h := newHost(t, path, func(c *plugins.Config) {
		c.CallTimeout = 10 * time.Second // only reload-caused failures count here
		c.OnReload = func(gen uint64) { reloaded.Store(gen) }
	})
	stop := make(chan struct{})
	var calls, failures atomic.Uint64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: "good", Route: "GET /v1/sandboxes/{sb}"})
				calls.Add(1)
				if err != nil || !d.Allow {
					failures.Add(1)
					t.Errorf("call failed during reload: %+v, %v", d, err)
				}
			}
		})
	}
	const swaps = 20
	for i := range swaps {
		replace(t, path, files[(i+1)%2])
		if err := h.Reload(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if calls.Load() < swaps {
		t.Errorf("only %d calls during %d swaps", calls.Load(), swaps)
	}
	if failures.Load() != 0 {
		t.Fatalf("%d of %d calls failed", failures.Load(), calls.Load())
	}
	if got := reloaded.Load(); got != swaps+1 {
		t.Errorf("OnReload saw generation %d, want %d", got, swaps+1)
	}
	// Every replaced runtime closes once its last call returned (asynchronously).
	waitFor(t, "old runtimes closed", func() bool { return h.Stats().RuntimesClosed == swaps })
	s := h.Stats()
	if s.Loads != swaps+1 || s.Reloads != swaps || s.RuntimesOpened != swaps+1 || s.Generation != swaps+1 {
		t.Fatalf("stats after %d swaps: %+v", swaps, s)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if s := h.Stats(); s.RuntimesClosed != swaps+1 {
		t.Fatalf("after Close: %d of %d runtimes closed", s.RuntimesClosed, s.RuntimesOpened)
	}
}

func TestReloadBrokenFileKeepsOld(t *testing.T) {
	t.Parallel()
	path := copyTo(t, plugin(t, "echo"))
	h := newHost(t, path, nil)
	tests := []struct {
		name  string
		write func()
		want  error
	}{
		{name: "junk", write: func() { must(t, os.WriteFile(path, []byte("junk"), 0o644)) }, want: plugins.ErrInvalidModule},
		{name: "missing", write: func() { must(t, os.Remove(path)) }, want: os.ErrNotExist},
	}
	for i, tt := range tests { // sequential: they share the host
		tt.write()
		err := h.Reload(ctx)
		if !errors.Is(err, tt.want) {
			t.Fatalf("%s: got %v, want %v", tt.name, err, tt.want)
		}
		if d, err := h.Route(ctx, &plugins.RouteRequest{Command: []string{"deny"}}); err != nil || d.Reason != "command says deny" {
			t.Fatalf("%s: old module not in service: %+v, %v", tt.name, d, err)
		}
		if s := h.Stats(); s.Generation != 1 || s.ReloadFailures != uint64(i+1) {
			t.Fatalf("%s: stats %+v", tt.name, s)
		}
	}
	if s := h.Stats(); s.RuntimesOpened != 2 || s.RuntimesClosed != 1 {
		t.Fatalf("the failed load's runtime must be closed: %+v", s)
	}
}

func TestWatcherReloadsChangedFile(t *testing.T) {
	t.Parallel()
	path := copyTo(t, plugin(t, "echo"))
	h := newHost(t, path, func(c *plugins.Config) { c.PollInterval = 10 * time.Millisecond })
	replace(t, path, plugin(t, "bad"))
	waitFor(t, "watcher reload", func() bool { return h.Generation() == 2 })
	// Same bytes again (new mtime): hashed, not reloaded.
	replace(t, path, plugin(t, "bad"))
	must(t, os.WriteFile(path+".junk", []byte("junk"), 0o644))
	must(t, os.Rename(path+".junk", path))
	waitFor(t, "failed reload counted", func() bool { return h.Stats().ReloadFailures == 1 })
	if s := h.Stats(); s.Generation != 2 || s.Reloads != 1 {
		t.Fatalf("stats %+v", s)
	}
	if d, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: "good"}); err != nil || !d.Allow {
		t.Fatalf("after broken file: %+v, %v", d, err)
	}
}

// TestHostLeavesNothing is not parallel: it checks that a host with a watcher, after
// calls, a failure, a reload and Close, leaves no goroutine or file descriptor behind.
func TestHostLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	path := copyTo(t, plugin(t, "echo"))
	cfg := plugins.Config{Path: path, CacheDir: cacheDir, PollInterval: 5 * time.Millisecond, Logger: quiet, PoolSize: 2}
	h, err := plugins.New(context.Background(), &cfg)
	must(t, err)
	for range 10 {
		_, _ = h.Route(ctx, &plugins.RouteRequest{})
	}
	replace(t, path, plugin(t, "bad"))
	waitFor(t, "reload", func() bool { return h.Generation() == 2 })
	if _, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: "trap"}); !errors.Is(err, plugins.ErrTrap) {
		t.Fatalf("got %v", err)
	}
	must(t, h.Close())
	if s := h.Stats(); s.RuntimesOpened != s.RuntimesClosed {
		t.Fatalf("runtimes opened %d closed %d", s.RuntimesOpened, s.RuntimesClosed)
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
