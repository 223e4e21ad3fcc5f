package actor

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestFIFOGateHammer takes tickets in order, then lets goroutines race to run them;
// some give up while waiting. The ones that run must run in ticket order, one at a
// time, and nobody may wait forever.
func TestFIFOGateHammer(t *testing.T) {
	t.Parallel()
	var g fifoGate
	const N = 2000
	tickets := make([]uint64, N)
	for i := range tickets {
		tickets[i] = g.ticket()
	}
	var mu sync.Mutex
	var ran []uint64
	running := 0
	var wg sync.WaitGroup
	for i := N - 1; i >= 0; i-- { // start in reverse to make them wait
		wg.Go(func() {
			tk := tickets[i]
			ctx := context.Background()
			if i%7 == 3 {
				c, cancel := context.WithTimeout(ctx, time.Duration(i%5)*time.Millisecond)
				defer cancel()
				ctx = c
			}
			if err := g.wait(ctx, tk); err != nil {
				g.finish(tk) // gave up: does not hold up the others
				return
			}
			mu.Lock()
			running++
			if running != 1 {
				t.Errorf("%d holders at once", running)
			}
			ran = append(ran, tk)
			running--
			mu.Unlock()
			g.finish(tk)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("gate wedged")
	}
	for i := 1; i < len(ran); i++ {
		if ran[i] <= ran[i-1] {
			t.Fatalf("ran out of order: %d after %d", ran[i], ran[i-1])
		}
	}
	if g.served != N || len(g.done) != 0 {
		t.Fatalf("served %d, %d pending", g.served, len(g.done))
	}
}
