package actor

import (
	"errors"
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

// TestHammerFence posts events to a few sandboxes from many goroutines while another
// goroutine keeps fencing the node, releasing sandboxes and moving their owner epoch.
// Every request gets one answer, success or ErrUnavailable; every acknowledged event
// is stored exactly once and nothing else is, seq without gaps.
func TestHammerFence(t *testing.T) {
	t.Parallel()
	var own ownership
	n := newTestNode(t, func(c *Config) { c.NodeID = "hammer-fence"; own.config(c) })
	const sandboxes, workers, per = 4, 8, 50
	for i := range sandboxes {
		mustCreate(t, n, fmt.Sprintf("hf%d", i))
	}
	stop := make(chan struct{})
	var disrupter sync.WaitGroup
	var disruptions atomic.Int64
	disrupter.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				n.Fence("hammer")
			case 1:
				n.Release([]string{fmt.Sprintf("hf%d", i%sandboxes)})
			case 2:
				own.epoch.Add(1)
			}
			disruptions.Add(1)
			time.Sleep(500 * time.Microsecond) // pacing, so requests get through between
		}
	})
	acks := newAckLog(sandboxes)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				sb := (w*5 + i) % sandboxes
				seq, err := n.PostEvent(tctx(t), fmt.Sprintf("hf%d", sb), "agent.h", nil)
				if err != nil {
					if !errors.Is(err, ErrUnavailable) {
						t.Error(err)
						return
					}
					continue
				}
				acks.note(t, fmt.Sprintf("hf%d", sb), sb, seq)
			}
		})
	}
	wg.Wait()
	close(stop)
	disrupter.Wait()
	total := 0
	for i := range sandboxes {
		evs, err := n.Events(tctx(t), fmt.Sprintf("hf%d", i), 0, 0)
		must(t, err)
		total += acks.check(t, fmt.Sprintf("hf%d", i), i, evs, "agent.h", func(e Event) bool { return e.Type == "sandbox.created" })
	}
	t.Logf("%d of %d posts acknowledged across %d disruptions", total, workers*per, disruptions.Load())
}
