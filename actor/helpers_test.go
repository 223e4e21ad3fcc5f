package actor

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor/actortest"
)

func openTestBolt(tb testing.TB) *BoltStore {
	tb.Helper()
	s, err := OpenBolt(filepath.Join(tb.TempDir(), "actors.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("err = %v, want %v", err, target)
	}
}

// eventually polls cond every 5ms until it holds or d passes.
func eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type testNode struct {
	*Node
	clock *actortest.Clock
	cfg   *Config
}

// newTestNode opens a node on a fresh data dir with a fake clock; edit adjusts the
// config. The node is closed at cleanup.
func newTestNode(tb testing.TB, edit func(c *Config)) *testNode {
	tb.Helper()
	clk := actortest.NewClock(time.Time{})
	cfg := &Config{NodeID: "n1", DataDir: tb.TempDir(), Clock: clk, Logger: slog.New(slog.DiscardHandler)}
	if edit != nil {
		edit(cfg)
	}
	return reopen(tb, cfg, clk)
}

func reopen(tb testing.TB, cfg *Config, clk *actortest.Clock) *testNode {
	tb.Helper()
	n, err := Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return &testNode{Node: n, clock: clk, cfg: cfg}
}

func closeNode(tb testing.TB, n *testNode) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(tb, n.Close(ctx))
}

func tctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func mustCreate(tb testing.TB, n *testNode, id string) SandboxInfo {
	tb.Helper()
	in, created, err := n.CreateSandbox(tctx(tb), SandboxSpec{ID: id, Labels: map[string]string{"k": "v"}})
	must(tb, err)
	if !created {
		tb.Fatalf("sandbox %s existed", id)
	}
	return in
}

func eventTypes(tb testing.TB, n *testNode, id string) []string {
	tb.Helper()
	evs, err := n.Events(tctx(tb), id, 0, 0)
	must(tb, err)
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// passivateAll advances the fake clock until every actor has passivated. It advances
// repeatedly because an actor arms its passivation timer just after answering.
func passivateAll(tb testing.TB, n *testNode) {
	tb.Helper()
	eventually(tb, 60*time.Second, "passivation", func() bool {
		n.clock.Advance(n.Node.cfg.PassivateAfter + time.Second)
		return n.ActiveActors() == 0
	})
}
