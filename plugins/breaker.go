package plugins

import (
	"sync/atomic"
	"time"
)

// breaker is a consecutive-failure circuit breaker. It is safe for concurrent use and
// lock-free on the closed (healthy) path.
//
// Closed: every call goes through. After threshold consecutive failures it opens until
// now+cooldown; calls are refused. The first call after that is let through as a
// trial (and the window is pushed out again, so only one trial runs); its success
// closes the breaker, its failure keeps it open for another cooldown.
type breaker struct {
	threshold int64
	cooldown  int64 // nanoseconds
	fails     atomic.Int64
	openUntil atomic.Int64 // unix nanoseconds; 0 when closed
}

func (b *breaker) init(threshold int, cooldown time.Duration) {
	b.threshold, b.cooldown = int64(threshold), int64(cooldown)
}

// allow reports whether a call may go through. It reads the clock only when the breaker
// is open: time.Now costs ~70 ns on our VMs, a noticeable part of a decision.
func (b *breaker) allow(now func() time.Time) bool {
	until := b.openUntil.Load()
	if until == 0 {
		return true
	}
	n := now().UnixNano()
	if n < until {
		return false
	}
	return b.openUntil.CompareAndSwap(until, n+b.cooldown)
}

// record counts the outcome of a call; it reads the clock only on failures.
func (b *breaker) record(ok bool, now func() time.Time) {
	if ok {
		if b.fails.Load() != 0 {
			b.fails.Store(0)
		}
		if b.openUntil.Load() != 0 {
			b.openUntil.Store(0)
		}
		return
	}
	if b.fails.Add(1) >= b.threshold {
		b.openUntil.Store(now().UnixNano() + b.cooldown)
	}
}

func (b *breaker) isOpen() bool { return b.openUntil.Load() != 0 }

func (b *breaker) reset() {
	b.fails.Store(0)
	b.openUntil.Store(0)
}
