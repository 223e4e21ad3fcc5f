package gateway

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestArrivingHammer marks workspaces as arriving and done from many goroutines while
// others ask: a sandbox is reported arriving exactly while one import holds it, a
// second import of it is refused meanwhile, and the lock-free fast path sees none
// once all ended.
func TestArrivingHammer(t *testing.T) {
	t.Parallel()
	g := &handoffGate{ending: map[string]time.Time{}}
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	var got atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			sb := fmt.Sprintf("sb-%d", w%4) // two workers per sandbox: they contend
			for range rounds {
				if !g.arrive(sb) {
					continue
				}
				got.Add(1)
				if !g.isArriving(sb) {
					errs <- fmt.Errorf("%s not arriving while held", sb)
					return
				}
				if g.arrive(sb) {
					errs <- fmt.Errorf("%s arrived twice at once", sb)
					return
				}
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
		t.Fatal("no import ever got a sandbox")
	}
	if n := g.arriving.Load(); n != 0 || len(g.incoming) != 0 {
		t.Fatalf("after the hammer: %d arriving, %v", n, g.incoming)
	}
}
