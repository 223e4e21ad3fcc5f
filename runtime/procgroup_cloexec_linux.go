package runtime

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

var cloexecOnce sync.Once

// markCloexec sets FD_CLOEXEC on every open fd above 2, once per process. Go opens
// everything O_CLOEXEC, but fds inherited from our own parent (a supervisor's pipes,
// a terminal) are not, and exec would pass them to every child.
func markCloexec() {
	cloexecOnce.Do(func() {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return
		}
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd <= 2 {
				continue
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, fl|unix.FD_CLOEXEC)
			}
		}
	})
}
