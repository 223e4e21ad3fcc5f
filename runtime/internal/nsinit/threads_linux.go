package nsinit

import (
	goruntime "runtime"
	"sync"
)

// spareMs is how many idle threads the init makes before it serves requests.
//
// The spawner thread blocks in recvmsg and the reaper in waitid, each holding a
// thread, so Go's scheduler starts another thread to run whatever goroutine wakes
// meanwhile; left to itself it would do so at some later spawn, and every thread of
// the init counts in the sandbox's pids group, whose usage the API shows. Threads Go
// made stay in its idle list for the life of the process, so made here, at start,
// the init's thread count stays what it is once the sandbox is ready.
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
