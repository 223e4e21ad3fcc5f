package actor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// BenchmarkStartProcess measures StartProcess of a sandbox's first process (which
// lists the sandbox in the run index, a durable write of its own: running.go) against
// a later process of an already listed sandbox, in the same run. It reports both and
// their ratio ("x_next").
func BenchmarkStartProcess(b *testing.B) {
	n := newTestNode(b, nil)
	ctx := context.Background()
	start := func(sb string) time.Duration {
		t0 := time.Now()
		in, err := n.StartProcess(ctx, sb, runtime.StartOptions{Argv: []string{"true"}})
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		p, err := n.Process(ctx, sb, in.ID)
		if err == nil {
			_, err = p.Wait(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	mustCreate(b, n, "warm")
	start("warm")
	var first, next time.Duration
	for i := range b.N {
		sb := fmt.Sprintf("b%d", i)
		mustCreate(b, n, sb)
		first += start(sb)
		next += start("warm")
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first_ns")
	b.ReportMetric(float64(next.Nanoseconds())/float64(b.N), "next_ns")
	b.ReportMetric(float64(first)/float64(next), "x_next")
}

// BenchmarkWorkspaceOpen measures opening and closing a sandbox's workspace for the
// files API (an os.Root of the workspaces directory, then of the workspace) against a
// no-op turn, in the same run, and reports their ratio ("x_turn").
func BenchmarkWorkspaceOpen(b *testing.B) {
	n := newTestNode(b, nil)
	ctx := context.Background()
	mustCreate(b, n, "ws")
	noop := func(a *sbActor) (int, error) { return 1, nil }
	var open, turn time.Duration
	for range b.N {
		t0 := time.Now()
		w, err := n.Workspace(ctx, "ws")
		if err != nil {
			b.Fatal(err)
		}
		w.Close()
		t1 := time.Now()
		if _, err := call(ctx, n.Node, "ws", noop); err != nil {
			b.Fatal(err)
		}
		open, turn = open+t1.Sub(t0), turn+time.Since(t1)
	}
	b.ReportMetric(float64(open.Nanoseconds())/float64(b.N), "open_ns")
	b.ReportMetric(float64(turn.Nanoseconds())/float64(b.N), "turn_ns")
	b.ReportMetric(float64(open)/float64(turn), "x_turn")
}
