package clustertest

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// procTree is a set of processes held by pidfd, so that signalling and waiting never
// touch a process that reused one of their pids.
type procTree struct {
	pids []int
	fds  []int
}

// descendants opens a pidfd on every live descendant of pid, pid excluded.
func descendants(pid int) *procTree {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			kids[pp] = append(kids[pp], p)
		}
	}
	t := &procTree{}
	queue := append([]int(nil), kids[pid]...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, kids[p]...)
		fd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			continue // gone already
		}
		t.pids, t.fds = append(t.pids, p), append(t.fds, fd)
	}
	return t
}

// parentOf reads the parent pid of p from /proc.
func parentOf(p int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// kill sends SIGKILL to every process of t.
func (t *procTree) kill() {
	for _, fd := range t.fds {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// wait waits up to d until every process of t has exited, reaping those that were
// re-parented to this process, and returns the pids still alive.
func (t *procTree) wait(d time.Duration) []int {
	deadline := time.Now().Add(d)
	live := make([]unix.PollFd, 0, len(t.fds))
	for _, fd := range t.fds {
		live = append(live, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	for len(live) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		// A pidfd becomes readable when its process exits: wait for that, not a tick.
		if _, err := unix.Poll(live, int(left.Milliseconds())+1); err != nil && err != unix.EINTR {
			break
		}
		next := live[:0]
		for _, p := range live {
			if p.Revents == 0 {
				p.Revents = 0
				next = append(next, p)
				continue
			}
			// Reap it if it is ours now; ECHILD when it is someone else's.
			_ = unix.Waitid(unix.P_PIDFD, int(p.Fd), nil, unix.WEXITED|unix.WNOHANG, nil)
		}
		live = next
	}
	var alive []int
	for _, p := range live {
		for i, fd := range t.fds {
			if int32(fd) == p.Fd {
				alive = append(alive, t.pids[i])
			}
		}
	}
	return alive
}

// close closes t's pidfds.
func (t *procTree) close() {
	for _, fd := range t.fds {
		_ = unix.Close(fd)
	}
	t.fds, t.pids = nil, nil
}

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) { _ = unix.Kill(-pgid, unix.SIGKILL) }
