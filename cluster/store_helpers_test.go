package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gate holds a replica's FSM before each batch entry while it is shut.
type gate struct {
	mu sync.Mutex
	ch chan struct{}
}

func (g *gate) shut() {
	g.mu.Lock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
	g.mu.Unlock()
}

func (g *gate) wait(uint64) {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// mustWrite writes kv pairs to sb through n with sb's current epoch in n's table.
func mustWrite(tb testing.TB, n *Node, sb string, kv ...string) {
	tb.Helper()
	if err := writeCurrent(n, put(sb, kv...)); err != nil {
		tb.Fatalf("write %s through %s: %v", sb, n.ID(), err)
	}
}

// writeCurrent writes b, which is safe to apply twice, with its sandbox's current
// epoch in n's table, as writeIdempotent does. A write fenced because the partition
// moved meanwhile is written again with the epoch n's table has then: on a loaded
// machine a node can miss its lease (300 ms in the test profile) and have its
// partitions moved in the middle of a test that is not about that. A fenced batch
// applied nothing, so this changes no write's outcome; it gives up after patience.
func writeCurrent(n *Node, b *Batch) error {
	deadline := time.Now().Add(patience)
	for {
		b.Epoch = n.Epoch(b.Sandbox)
		err := writeIdempotent(n, b)
		if !errors.Is(err, ErrFenced) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond) // n's table catches up with the move: no event to wait on here
	}
}

// writeRetry writes b, retrying while no leader takes it (an election under load):
// such a failure applied nothing.
func writeRetry(n *Node, b *Batch) error {
	deadline := time.Now().Add(patience)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		err := n.Write(ctx, b)
		cancel()
		if err == nil || !errors.Is(err, ErrNotLeader) || errors.Is(err, ErrIndeterminate) || time.Now().After(deadline) {
			return err
		}
	}
}

// writeIdempotent writes b, which is safe to apply twice, retrying unknown outcomes
// (a leadership change under load) as well.
func writeIdempotent(n *Node, b *Batch) error {
	deadline := time.Now().Add(patience)
	for {
		err := writeRetry(n, b)
		if err == nil || !errors.Is(err, ErrIndeterminate) || time.Now().After(deadline) {
			return err
		}
	}
}

// get reads one key of sb on n, "<nil>" when absent.
func get(tb testing.TB, n *Node, sb, key string) string {
	tb.Helper()
	out := "<nil>"
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := n.Read(ctx, sb, func(r Reader) error {
		if v := r.Get([]byte(key)); v != nil {
			out = string(v)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("read %s on %s: %v", sb, n.ID(), err)
	}
	return out
}

// records returns every record of sb on n as "k=v" in key order.
func records(tb testing.TB, n *Node, sb string) string {
	tb.Helper()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := n.Read(ctx, sb, func(r Reader) error {
		r.Scan(nil, nil, func(k, v []byte) bool { out = append(out, string(k)+"="+string(v)); return true })
		return nil
	})
	if err != nil {
		tb.Fatalf("read %s on %s: %v", sb, n.ID(), err)
	}
	return fmt.Sprint(out)
}

// caughtUp waits until every node's replica has applied everything the leader had
// committed when the wait began (through Node.sync, retried across elections).
func caughtUp(tb testing.TB, nodes ...*Node) {
	tb.Helper()
	for _, n := range nodes {
		waitFor(tb, string(n.ID())+" to catch up", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return n.sync(ctx) == nil
		})
	}
}

// gated starts a 3-node cluster whose replicas can each be held behind.
func gated(tb testing.TB) ([]*Node, []*gate) {
	tb.Helper()
	gates := []*gate{{}, {}, {}}
	nodes := clusterWith(tb, 3, func(i int, cfg *Config) { cfg.BeforeBatches = gates[i].wait })
	tb.Cleanup(func() { // before the nodes close (cleanups run last first)
		for _, g := range gates {
			g.open()
		}
	})
	return nodes, gates
}

// follower returns a node that is not the leader now and owns a sample sandbox.
func followerOwner(tb testing.TB, nodes []*Node) (*Node, string) {
	tb.Helper()
	var f *Node
	var sb string
	waitFor(tb, "a follower that owns a sandbox", func() bool {
		for _, n := range nodes {
			if n.IsLeader() {
				continue
			}
			if own := ownedUpTo(n, 1); len(own) == 1 {
				f, sb = n, own[0]
				return true
			}
		}
		return false
	})
	return f, sb
}
