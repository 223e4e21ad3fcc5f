package actor

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor/actortest"
)

func TestAlarmsOrder(t *testing.T) {
	t.Parallel()
	clk := actortest.NewClock(time.Time{})
	var mu sync.Mutex
	var fired []string
	s := newAlarms(clk, func(id string) { mu.Lock(); fired = append(fired, id); mu.Unlock() })
	t0 := clk.Now()
	s.set("c", t0.Add(3*time.Second))
	s.set("a", t0.Add(1*time.Second))
	s.set("b", t0.Add(5*time.Second))
	s.set("b", t0.Add(2*time.Second)) // moved earlier
	s.set("d", t0.Add(4*time.Second))
	s.clear("d")
	clk.Advance(2 * time.Second)
	if fmt.Sprint(fired) != "[a b]" {
		t.Fatalf("after 2s fired %v", fired)
	}
	clk.Advance(10 * time.Second)
	if fmt.Sprint(fired) != "[a b c]" || s.len() != 0 || clk.Pending() != 0 {
		t.Fatalf("fired %v, %d left, %d timers", fired, s.len(), clk.Pending())
	}
	s.close()
	s.set("e", t0)
	clk.Advance(time.Hour)
	if len(fired) != 3 {
		t.Fatal("closed heap fired")
	}
}

// TestAlarmsHammer sets and clears alarms from many goroutines while the clock
// advances: every alarm left set fires exactly once, a cleared one at most once.
func TestAlarmsHammer(t *testing.T) {
	t.Parallel()
	clk := actortest.NewClock(time.Time{})
	var mu sync.Mutex
	count := map[string]int{}
	s := newAlarms(clk, func(id string) { mu.Lock(); count[id]++; mu.Unlock() })
	stop := make(chan struct{})
	var adv sync.WaitGroup
	adv.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(time.Second)
			}
		}
	})
	const workers, per = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				id := fmt.Sprintf("w%d-%d", w, i)
				s.set(id, clk.Now().Add(time.Duration(i%50)*time.Second))
				if i%3 == 0 {
					s.clear(id)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	adv.Wait()
	clk.Advance(time.Hour)
	for w := range workers {
		for i := range per {
			id := fmt.Sprintf("w%d-%d", w, i)
			if c := count[id]; (i%3 == 0 && c > 1) || (i%3 != 0 && c != 1) {
				t.Fatalf("%s fired %d times (cleared: %v)", id, c, i%3 == 0)
			}
		}
	}
	if s.len() != 0 {
		t.Fatalf("%d alarms left", s.len())
	}
}
