package plugins

import (
	"sync"
	"sync/atomic"
	"time"
)

// watchdog ends the call contexts of calls that overran their deadline. One goroutine
// looks at every registered context once per tick while calls are being made: a call
// only stores its deadline, where arming and stopping a timer per call would take the
// runtime's timer lock twice (about 5% of a whole Go-guest decision). The goroutine is
// started by the first call after an idle spell and stops itself after idleTicks ticks
// without a call in flight, so an idle host costs nothing. A runaway call is ended at
// most one tick after its deadline, plus scheduling.
type watchdog struct {
	tick    time.Duration
	running atomic.Bool
	quit    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	calls map[*callContext]struct{}
}

// idleTicks is how many ticks without a call in flight stop the goroutine.
const idleTicks = 64

// newWatchdog returns a watchdog for calls of at most timeout: it looks every tenth of
// it, but at least every millisecond and at most every 100 µs.
func newWatchdog(timeout time.Duration) *watchdog {
	return &watchdog{
		tick:  min(max(timeout/10, 100*time.Microsecond), time.Millisecond),
		quit:  make(chan struct{}),
		calls: make(map[*callContext]struct{}),
	}
}

func (w *watchdog) add(c *callContext) {
	w.mu.Lock()
	w.calls[c] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(c *callContext) {
	w.mu.Lock()
	delete(w.calls, c)
	w.mu.Unlock()
}

// watch makes sure the goroutine runs; a call has just stored its deadline.
func (w *watchdog) watch() {
	if !w.running.Load() && w.running.CompareAndSwap(false, true) {
		w.wg.Add(1)
		go w.run()
	}
}

func (w *watchdog) run() {
	defer w.wg.Done()
	t := time.NewTicker(w.tick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		if w.scan() {
			idle = 0
			continue
		}
		if idle++; idle < idleTicks {
			continue
		}
		// Stop, unless a call started meanwhile: a call stores its deadline before it
		// looks at running, and this goroutine clears running before it looks at the
		// deadlines, so one of the two sees the other.
		w.running.Store(false)
		if !w.scan() || !w.running.CompareAndSwap(false, true) {
			return
		}
		idle = 0
	}
}

// scan ends the calls past their deadline and reports whether any call is in flight.
func (w *watchdog) scan() bool {
	now := time.Now().UnixNano()
	busy := false
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.calls {
		if d := c.deadline.Load(); d > 0 {
			busy = true
			c.expire(d, now)
		}
	}
	return busy
}

// close stops the goroutine and waits for it. No call may start afterwards.
func (w *watchdog) close() {
	close(w.quit)
	w.wg.Wait()
}
