package plugins_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/plugins/pluginstest"
)

var (
	builder *pluginstest.Builder
	// cacheDir is wazero's compilation cache, shared by every test and kept between
	// runs: compiling one Go module takes ~3 s, ~20 s under -race.
	cacheDir = pluginstest.CacheDir()
)

func TestMain(m *testing.M) {
	b, err := pluginstest.NewBuilder()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builder = b
	// Build and compile the test plugins once, concurrently, before the tests race to.
	if err := pluginstest.Warm(b, cacheDir, filepath.Join("testdata", "echo"), filepath.Join("testdata", "bad")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = b.Close()
	os.Exit(code)
}

// plugin returns the path of testdata plugin name, built once per test binary.
func plugin(tb testing.TB, name string) string {
	tb.Helper()
	p, err := builder.Go(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// copyTo copies src into a fresh file in tb's temp dir and returns its path.
func copyTo(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "policy.wasm")
	replace(tb, dst, src)
	return dst
}

// replace atomically replaces dst with a copy of src.
func replace(tb testing.TB, dst, src string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		tb.Fatal(err)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newHost starts a Host on path with test defaults (no watcher, quiet logs), lets edit
// change the config, and closes it at cleanup.
func newHost(tb testing.TB, path string, edit func(*plugins.Config)) *plugins.Host {
	tb.Helper()
	cfg := plugins.Config{Path: path, CacheDir: cacheDir, PollInterval: -1, Logger: quiet, PoolSize: 2, CallTimeout: 5 * time.Second} // generous: CI machines are loaded
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := plugins.New(ctx, &cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// waitFor polls cond every 5ms for up to 20s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
