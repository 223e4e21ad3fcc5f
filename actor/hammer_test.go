package actor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHammerPassivation sends requests to a few sandboxes from many goroutines while
// another goroutine keeps advancing the fake clock, so activations passivate and
// reactivate under the requests' feet. Every request must be answered exactly once,
// and every sandbox's event log must hold exactly the events posted, seq without gaps.
func TestHammerPassivation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.PassivateAfter = time.Second
		c.Limits = Budget{IdleTTL: 1000 * time.Hour, MaxDuration: 10000 * time.Hour}
	})
	const sandboxes, workers, per = 8, 16, 60
	for i := range sandboxes {
		mustCreate(t, n, fmt.Sprintf("h%d", i))
	}
	stop := make(chan struct{})
	var advancer sync.WaitGroup
	advancer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n.clock.Advance(2 * time.Second)
			time.Sleep(200 * time.Microsecond)
		}
	})
	posted := make([]atomic.Int64, sandboxes)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				sb := (w*7 + i) % sandboxes
				if _, err := n.PostEvent(tctx(t), fmt.Sprintf("h%d", sb), "agent.h", nil); err != nil {
					t.Error(err)
					return
				}
				posted[sb].Add(1)
				if i%5 == 0 {
					if _, err := n.GetSandbox(tctx(t), fmt.Sprintf("h%d", sb)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	advancer.Wait()
	for i := range sandboxes {
		evs, err := n.Events(tctx(t), fmt.Sprintf("h%d", i), 0, 0)
		must(t, err)
		if int64(len(evs)) != posted[i].Load()+1 {
			t.Fatalf("h%d: %d events, want %d", i, len(evs), posted[i].Load()+1)
		}
		for j, e := range evs {
			if e.Seq != uint64(j+1) {
				t.Fatalf("h%d: event %d has seq %d", i, j, e.Seq)
			}
		}
	}
	if n.activations.Load() <= sandboxes {
		t.Logf("only %d activations: passivation did not interleave this run", n.activations.Load())
	} else {
		t.Logf("%d activations for %d sandboxes", n.activations.Load(), sandboxes)
	}
}
