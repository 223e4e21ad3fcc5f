package runtime

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// execOutput collects an exec's stdout and stderr. The read ends and the child's exit
// fd wait in an epoll instance whose fd waits in the runtime's poller (collect), so a
// command that runs holds no thread.
type execOutput struct {
	stdout, stderr capBuffer
	// outW and errW are the child's ends; started closes them in the parent.
	outW, errW *os.File
	// fds are the read ends, -1 once closed.
	fds [2]int
}

// open makes the two pipes of a zero execOutput, with limit for each stream.
func (o *execOutput) open(limit int) error {
	*o = execOutput{stdout: capBuffer{limit: limit}, stderr: capBuffer{limit: limit}, fds: [2]int{-1, -1}}
	for i, w := range []**os.File{&o.outW, &o.errW} {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			o.started()
			o.close()
			return os.NewSyscallError("pipe2", err)
		}
		o.fds[i], *w = p[0], os.NewFile(uintptr(p[1]), "|1")
	}
	return nil
}

// started closes the child's ends in the parent, once the child has them (or failed);
// a second call does nothing. After a start collect calls it when the exit is seen,
// not before: while the parent holds them, the pipes cannot hang up before the exit
// fd reports, so an exec of a command that exits is woken once, by its exit, with the
// hang-ups already there once the ends are closed, instead of once for the hang-ups
// and again for the exit a moment later (BENCHMARKS.md, "#14, eighth pass").
func (o *execOutput) started() {
	for _, w := range []**os.File{&o.outW, &o.errW} {
		if *w != nil {
			_ = (*w).Close()
			*w = nil
		}
	}
}

// close closes the read ends that are still open.
func (o *execOutput) close() {
	for i, fd := range o.fds {
		if fd >= 0 {
			_ = unix.Close(fd)
			o.fds[i] = -1
		}
	}
}

// collect reads both streams until the leader l exits, then calls exited, which must
// kill what is left of the tree and reap the child, and reads on until both streams end
// or drainBound passes (something outside the tree may hold a write end). It closes the
// child's ends (started) when it sees the exit, before it calls exited, and the read
// ends before it returns. An error means waiting failed; exited has been called then
// too.
//
// The two read ends and the exit fd wait in an epoll instance, whose fd waits in the
// runtime's poller: the calling goroutine parks, so a running command holds no thread
// and no P, and one goroutine serves all three fds. Instances are reused from polls
// (execPolls). Per exec that is three registrations and two removals, where a poller
// file per fd took three of each, a non-blocking switch and a flag read per fd, a dup
// of a lent exit fd, and a reader goroutine per stream (BENCHMARKS.md, "#14, sixth
// pass"). The read ends stay blocking: each is read once per report of the
// level-triggered instance, which a pipe answers without blocking.
func (o *execOutput) collect(polls *execPolls, l leader, exited func()) error {
	defer o.close()
	defer o.started() // on the error paths
	exitFD, owned, err := l.exitFD()
	if err != nil {
		exited()
		return err
	}
	if owned {
		defer unix.Close(exitFD)
	}
	ep, err := polls.get()
	if err != nil {
		exited()
		return err
	}
	clean := false // ep holds nothing of this exec's any more: it may serve another
	drainSet := false
	defer func() {
		if clean && drainSet {
			_ = ep.f.SetReadDeadline(time.Time{})
		}
		polls.put(ep, clean)
	}()
	if err := ep.watch(exitFD, o.fds); err != nil {
		exited()
		return err
	}
	rc, err := ep.f.SyscallConn()
	if err != nil {
		exited()
		return err
	}
	bufs := [2]*capBuffer{&o.stdout, &o.stderr}
	var evs [3]unix.EpollEvent
	removed := true
	for done := false; o.fds[0] >= 0 || o.fds[1] >= 0 || !done; {
		var n int
		var werr error
		err := rc.Read(func(fd uintptr) bool {
			for n, werr = unix.EpollWait(int(fd), evs[:], 0); errors.Is(werr, unix.EINTR); {
				n, werr = unix.EpollWait(int(fd), evs[:], 0)
			}
			if n == 0 && werr == nil && done && !drainSet {
				// Streams still open after the exit: the drain bound runs from here.
				// Set only when it is waited on (not when, as usual, the streams' ends
				// are there with the exit), which spares two changes of the poller's
				// timers per exec.
				drainSet = true
				_ = ep.f.SetReadDeadline(time.Now().Add(drainBound))
			}
			return n != 0 || werr != nil
		})
		if err == nil && werr != nil {
			err = os.NewSyscallError("epoll_wait", werr)
		}
		if err != nil {
			if done { // the drain bound passed
				return nil
			}
			exited()
			return err
		}
		for _, ev := range evs[:n] {
			i := int(ev.Fd)
			if i == execPollExit {
				done = true
				o.started() // the streams may hang up now
				if en, ok := l.(exitNoter); ok {
					en.exitReported()
				}
				exited()
				continue
			}
			if o.fds[i] >= 0 {
				if ended, _ := bufs[i].readFD(o.fds[i]); ended {
					removed = removed && ep.unwatch(o.fds[i])
					_ = unix.Close(o.fds[i])
					o.fds[i] = -1
				}
			}
		}
	}
	// Both streams ended and were taken out, and the exit fd, watched once, reported:
	// nothing of this exec can be reported any more.
	clean = removed
	return nil
}

// readFD reads once from fd and reports whether the stream has ended, or else whether
// the read would have blocked.
//
// The first read goes to the stack and only what it got is kept: most commands write
// nothing or little to one of their streams, and a 512-byte buffer made up front for
// each stream was 1 KiB of an exec's ~8 KiB of garbage (BENCHMARKS.md, "#14, fourth
// pass").
func (c *capBuffer) readFD(fd int) (ended, again bool) {
	var n int
	var err error
	if cap(c.buf) == 0 && c.limit > 0 {
		var first [512]byte
		n, err = unix.Read(fd, first[:min(len(first), c.limit)])
		if n > 0 {
			c.buf = append(c.buf, first[:n]...)
		}
	} else if n, err = unix.Read(fd, c.space()); n > 0 {
		c.wrote(n)
	}
	switch {
	case errors.Is(err, unix.EAGAIN):
		return false, true
	case errors.Is(err, unix.EINTR):
		return false, false
	case err != nil:
		return true, false
	}
	return n == 0, false
}

// exitNotifier returns an fd that becomes readable once pid has exited (before it is
// reaped): its pidfd, or on a kernel without pidfds a pipe closed by a waiting goroutine.
func exitNotifier(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err == nil {
		return fd, nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	return waiterExitNotifier(pid)
}

// waiterExitNotifier is exitNotifier without pidfds: a goroutine waits for pid to exit,
// without reaping it, and closes the write end of a pipe.
func waiterExitNotifier(pid int) (int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, os.NewSyscallError("pipe2", err)
	}
	go func() {
		_ = waitExited(pid)
		_ = unix.Close(p[1])
	}()
	return p[0], nil
}
