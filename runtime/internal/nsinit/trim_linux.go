package nsinit

import (
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// trimAfter is how long an init goes without a spawn before it hands memory it no
// longer uses back to the kernel.
const trimAfter = time.Second

// tuneMemory sets what the init's Go runtime keeps for itself; runInit calls it
// first. An init never has its memory profiled, so it takes no allocation samples:
// each sampled stack would touch a page of the profiler's 1.4 MiB hash table and
// keep a bucket, which after a few thousand spawns was 60-90 KiB of the init's private
// memory. sandgate's own binary does not link the profiler, so the linker turns the
// samples off there already; a test binary links it through package testing, and
// this keeps its inits measuring as sandgate's do. (A lower GOGC was measured too and
// left out: BENCHMARKS.md, "#14, eighth pass: the init's memory after bursts".)
func tuneMemory() {
	goruntime.MemProfileRate = 0
}

// idleTrim runs its function once spawns have stopped for at least trimAfter (and at
// most twice that). The init has two: the heap's (newIdleTrim) and the async spawns'
// slots' (asyncSlots.giveBack).
//
// A spawn on the own path allocates nothing (the package doc, "Memory"), but one on
// the fallback path leaves its child's strings as garbage, so a burst of those grows
// Go's heap to its minimum goal (4 MiB), which the runtime keeps mapped for minutes;
// without the heap's trim an init that ran a few thousand execs held about 4 MiB
// more private memory than an idle one (BENCHMARKS.md, "#14, sixth pass: the
// spawner"). A busy init is not trimmed; an idle one holds what it uses.
//
// A spawn only counts itself and, if the timer is not set, sets it: two atomic
// operations on the spawn's path, no timer reset. When the timer fires it looks
// whether spawns were counted since it was set: if so it waits another trimAfter,
// else it runs the function. So an init that spawns nothing costs nothing, and a busy
// one one wake-up a trimAfter. spawned may be called from any goroutine.
type idleTrim struct {
	f     func()
	t     *time.Timer
	n     atomic.Uint64 // spawns counted so far
	seen  atomic.Uint64 // n when the timer was last set
	armed atomic.Bool   // the timer is set, or its function is running
}

// newIdleTrim returns the heap's trim, which waits for its first spawn.
func newIdleTrim() *idleTrim {
	_, objects := heapStats()
	h := &heapTrim{base: objects}
	return afterQuiet(h.trim)
}

// firstCollectionPays is how much the heap must have grown, before the Go runtime
// has ever collected, for the trim to collect it: the runtime's first collection
// makes metadata it keeps for the life of the process (sets of spans and mark bits
// for every size class in use: 430-460 KiB of an idle sandgate init's private memory,
// against the 40-120 KiB of garbage a few execs leave). An init that ran a few execs
// would come out of its first quiet spell bigger than it went in.
const firstCollectionPays = 512 << 10

// heapTrim is the heap's trim function. It returns the heap's free pages to the
// kernel (debug.FreeOSMemory: a collection, then every free page), unless the runtime
// has never collected and the heap has grown by less than firstCollectionPays since
// the init started (base: the bytes of its objects then). Once it has collected (the
// heap reached its goal, 4 MiB), the metadata is made and each trim only gives back.
type heapTrim struct{ base uint64 }

func (h *heapTrim) trim() {
	cycles, objects := heapStats()
	if cycles == 0 && objects < h.base+firstCollectionPays {
		return
	}
	debug.FreeOSMemory()
}

// heapStats returns how many collections the runtime has completed and the bytes of
// the heap's objects (live, and dead ones not yet swept).
func heapStats() (cycles, objects uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		objects = s[1].Value.Uint64()
	}
	return cycles, objects
}

// afterQuiet returns a trim that runs f once spawns have stopped; it waits for its
// first spawn. f runs on a goroutine of its own, never twice at once.
func afterQuiet(f func()) *idleTrim {
	tr := &idleTrim{f: f}
	tr.t = time.AfterFunc(time.Hour, tr.fire)
	tr.t.Stop()
	return tr
}

// spawned counts a spawn: the function runs between trimAfter and twice that after
// the last one.
func (tr *idleTrim) spawned() {
	n := tr.n.Add(1)
	if !tr.armed.Load() && tr.armed.CompareAndSwap(false, true) {
		tr.seen.Store(n)
		tr.t.Reset(trimAfter)
	}
}

// fire runs when the timer expires.
func (tr *idleTrim) fire() {
	n := tr.n.Load()
	if tr.seen.Swap(n) != n {
		tr.t.Reset(trimAfter) // spawns in the last trimAfter: not quiet yet
		return
	}
	tr.f()
	tr.armed.Store(false)
	// A spawn that came while f ran found the timer set and left it: set it again.
	if n2 := tr.n.Load(); n2 != n && tr.armed.CompareAndSwap(false, true) {
		tr.seen.Store(n2)
		tr.t.Reset(trimAfter)
	}
}
