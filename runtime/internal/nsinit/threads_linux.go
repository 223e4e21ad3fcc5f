package nsinit

import (
	goruntime "runtime"
	"sync"
)

// spareMs is how many idle threads the init makes before it serves requests.
//
// The spawner thread blocks in recvmsg and the reaper in waitid, each holding a
// thread, so Go's scheduler starts another thread to run whatever goroutine wakes
// meanwhile; left to itself it would do so at some later spawn. Every thread of the
// init counts in the sandbox's pids group: the usage the API shows, and its limit. A
// thread the init needs while the sandbox's processes hold every pid the limit allows
// cannot be made, and Go aborts the process: the whole sandbox would die. Threads Go
// made stay in its idle list for the life of the process, so made here, at start, the
// init's thread count mostly stays what it is once the sandbox is ready (in about one
// start in thirty a thread was still added at the first spawns). Each costs about
// 1-2 µs more per cgroup move of the init (two per spawn) and a few KiB.
const spareMs = 3

// initProcs is the init's GOMAXPROCS, set in its environment by Start.
//
// The spawner blocks in recvmsg and the reaper in waitid, and Go counts a thread in a
// blocking syscall as still holding its P. With every P held so, the scheduler's
// monitor thread (sysmon) takes them back after 20 µs, hands them off, and keeps
// polling every 20 µs instead of backing off to 10 ms: under eight clients it woke
// four to six times per exec, a fifth to a quarter of the init's CPU (BENCHMARKS.md,
// "#14, fifth pass"). It leaves a P in a syscall alone while another P is idle, so
// the init has one P beyond those two threads: the rest of its goroutines (signals, leases, the
// rare other request) need no more, and it does not grow with the host's CPUs as
// Go's default would (each P costs memory: the default on this machine's two CPUs was
// about 150 KiB less, and one more P about 150 KiB more).
const initProcs = 3

// spareThreads makes n threads and leaves them idle: n goroutines each lock a thread
// and wait until all are locked (so each holds a thread of its own), then unlock and
// end, which returns their threads to the scheduler (a goroutine ending while locked
// would end its thread instead).
func spareThreads(n int) {
	var locked, ended sync.WaitGroup
	release := make(chan struct{})
	locked.Add(n)
	for range n {
		ended.Go(func() {
			goruntime.LockOSThread()
			locked.Done()
			<-release
			goruntime.UnlockOSThread()
		})
	}
	locked.Wait()
	close(release)
	ended.Wait()
}
