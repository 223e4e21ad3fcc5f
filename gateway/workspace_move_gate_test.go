package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// TestArrivingHammer announces and receives workspaces from many goroutines while
// they ask: at most one stream of a sandbox is received at a time, a sandbox is
// arriving while its stream is received, and the count the lock-free path reads
// always matches the map.
func TestArrivingHammer(t *testing.T) {
	t.Parallel()
	g := &handoffGate{ending: map[string]time.Time{}}
	const workers, rounds = 8, 2000
	until := time.Now().Add(time.Hour)
	var holders [4]atomic.Int32
	var got atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			i := w % 4 // two workers per sandbox: they contend
			sb := fmt.Sprintf("sb-%d", i)
			for range rounds {
				g.announce(sb, 1, "x", until)
				if !g.receive(sb, 1, "x") {
					continue
				}
				got.Add(1)
				if holders[i].Add(1) != 1 {
					errs <- fmt.Errorf("%s received twice at once", sb)
					return
				}
				if !g.isArriving(sb) || g.announce(sb, 1, "x", until) {
					errs <- fmt.Errorf("%s not arriving, or announced again, while received", sb)
					return
				}
				holders[i].Add(-1)
				g.arrived(sb)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got.Load() == 0 {
		t.Fatal("no stream was ever received")
	}
	if n := g.arriving.Load(); n != int64(len(g.incoming)) {
		t.Fatalf("after the hammer: count %d, map %v", n, g.incoming)
	}
}

// TestArrivalExpiry: an announced workspace is awaited only until its time and while
// its sender is alive; once dropped it cannot be received, and one being received
// stays arriving whatever happens to its sender.
func TestArrivalExpiry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		until     time.Duration
		alive     bool
		receive   bool // received before the checks
		wantAwait bool
	}{
		{name: "awaited", until: time.Hour, alive: true, wantAwait: true},
		{name: "past its time", until: -time.Second, alive: true},
		{name: "sender gone", until: time.Hour, alive: false},
		{name: "received, sender gone", until: time.Hour, alive: true, receive: true, wantAwait: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var alive atomic.Bool
			alive.Store(true)
			g := &handoffGate{ending: map[string]time.Time{}, alive: func(cluster.NodeID) bool { return alive.Load() }}
			g.announce("sb", 7, "old", time.Now().Add(tt.until))
			if tt.receive && !g.receive("sb", 7, "old") {
				t.Fatal("not received")
			}
			alive.Store(tt.alive)
			if got := g.isArriving("sb"); got != tt.wantAwait {
				t.Fatalf("arriving %v, want %v", got, tt.wantAwait)
			}
			if !tt.wantAwait {
				alive.Store(true) // back: what was dropped stays dropped
				if g.isArriving("sb") || g.receive("sb", 7, "old") {
					t.Fatal("a dropped announcement came back")
				}
			}
			if !tt.receive && tt.wantAwait && (g.receive("sb", 8, "old") || g.receive("sb", 7, "other")) {
				t.Fatal("received for another handoff or sender")
			}
		})
	}
}

// TestMoveRunnerBound runs many streams' worth of work on a moveRunner: never more
// than handoffWorkers hold a slot at once, a cancelled wait gives up, and after close
// nothing new starts.
func TestMoveRunnerBound(t *testing.T) {
	t.Parallel()
	var m moveRunner
	var now, peak atomic.Int32
	ctx := t.Context()
	for range 4 * handoffWorkers {
		m.run(func() {
			if !m.acquire(ctx) {
				return
			}
			defer m.release()
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond) // hold the slot while others try
			now.Add(-1)
		})
	}
	m.close()
	if p := peak.Load(); p < 1 || p > handoffWorkers {
		t.Fatalf("peak of %d streams at once, want 1..%d", p, handoffWorkers)
	}
	for range handoffWorkers {
		if !m.acquire(ctx) {
			t.Fatal("a free slot was refused")
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if m.acquire(cancelled) {
		t.Fatal("acquired past the bound")
	}
	ran := false
	m.run(func() { ran = true })
	m.close()
	if ran {
		t.Fatal("a run started after close")
	}
}
