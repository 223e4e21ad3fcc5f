package nsinit

import (
	goruntime "runtime"
	"time"
)

// yieldEvery is how often the spawner and the reaper pass through Go's scheduler
// while they work: under the 10 ms after which Go's monitor thread counts a P's
// goroutine as running too long, and no more often than that needs. The spawner's
// yield is not free: its goroutine is locked to its thread, so Go hands its P to
// another thread and back (8 ms and 5 ms measured within noise of each other; the
// longer one yields less often).
const yieldEvery = 8 * time.Millisecond

// schedYield makes a goroutine that never parks, as the spawner and the reaper do
// not (each only blocks in syscalls, which keep its P), yield its P now and then, so
// Go's monitor thread (sysmon) does not take the P from it.
//
// sysmon counts a goroutine as running too long when its P has not scheduled
// anything new for 10 ms, which such a goroutine never lets it do. It then asks for a
// preemption and, the goroutine being in a syscall, takes its P away; the goroutine
// takes the P back, still on the same count, as its syscall returns, and the next
// look finds it again. Each of those takes makes sysmon start over from polling every
// 20 µs: under eight clients it took a P about 400 times a second and woke
// about 1,500 times, each a thread wake-up of the init (BENCHMARKS.md, "#14, eighth
// pass"). A Gosched every yieldEvery, while there is work, moves the count and sysmon
// backs off to its 10 ms. An idle init blocks in its syscalls and yields nothing.
//
// Used by one goroutine; the zero value is ready.
type schedYield struct{ last time.Time }

// maybe yields the P if yieldEvery passed since the last yield, and says whether it
// did; now is the time.
func (y *schedYield) maybe(now time.Time) bool {
	if now.Sub(y.last) < yieldEvery {
		return false
	}
	y.last = now
	goruntime.Gosched()
	return true
}
