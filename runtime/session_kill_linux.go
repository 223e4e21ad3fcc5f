package runtime

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sessWaitNoReap waits (see awaitExited) until the process exits, leaving it a zombie so its pid (and
// process group id) cannot be reused until it is reaped. It reports whether it did.
func sessWaitNoReap(pid int) bool {
	return awaitExited(pid) == nil
}

// sessKillTree kills the process group of leader and every descendant of leader,
// including those that left the group (setsid, setpgid). It first stops the group and
// each descendant it finds, so nothing forks while the tree is walked, and repeats the
// walk until it finds nothing new; then it sends SIGKILL to all of them.
func sessKillTree(leader int) {
	_ = syscall.Kill(-leader, syscall.SIGSTOP)
	seen := map[int]bool{}
	for range 20 {
		found := false
		for _, p := range sessDescendants(leader) {
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

// sessDescendants lists the live descendants of pid from /proc.
func sessDescendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		kids[pp] = append(kids[pp], p)
	}
	var out []int
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, k := range kids[p] {
			out = append(out, k)
			stack = append(stack, k)
		}
	}
	return out
}

// sessPending returns how many bytes wait in the pipe fd (FIONREAD).
func sessPending(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }
