package runtime

import (
	"syscall"

	"github.com/sandgate/sandgate/runtime/internal/procfs"
	"golang.org/x/sys/unix"
)

// sessKillTree kills the process group of leader and every descendant of leader,
// including those that left the group (setsid, setpgid). It first stops the group and
// each descendant it finds, so nothing forks while the tree is walked, and repeats the
// walk until it finds nothing new; then it sends SIGKILL to all of them.
func sessKillTree(leader int) {
	_ = syscall.Kill(-leader, syscall.SIGSTOP)
	seen := map[int]bool{}
	for range 20 {
		found := false
		for _, p := range procfs.Descendants(procfs.List("/proc"), leader) {
			if !seen[p] {
				seen[p] = true
				found = true
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	_ = syscall.Kill(-leader, syscall.SIGKILL)
	for p := range seen {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = syscall.Kill(leader, syscall.SIGKILL)
}

// sessPending returns how many bytes wait in the pipe fd (FIONREAD).
func sessPending(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }
