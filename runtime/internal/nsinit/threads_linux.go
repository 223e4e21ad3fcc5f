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
