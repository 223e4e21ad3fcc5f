package runtime

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// execOutput collects an exec's stdout and stderr on the calling goroutine: one poll(2)
// over both pipes and the child's pidfd, with no reader goroutines and nothing
// registered with the runtime poller. An exec of a short command then costs one thread
// waking up when it ends, the same as a bare fork, wait and read.
type execOutput struct {
	stdout, stderr capBuffer
	// outW and errW are the child's ends; started closes them in the parent.
	outW, errW *os.File
	// fds are the read ends, -1 once closed.
	fds [2]int
}

func newExecOutput(limit int) (*execOutput, error) {
	o := &execOutput{stdout: capBuffer{limit: limit}, stderr: capBuffer{limit: limit}, fds: [2]int{-1, -1}}
	for i, w := range []**os.File{&o.outW, &o.errW} {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			o.started()
			o.close()
			return nil, os.NewSyscallError("pipe2", err)
		}
		o.fds[i], *w = p[0], os.NewFile(uintptr(p[1]), "|1")
	}
	return o, nil
}

// started closes the child's ends in the parent, once the child has them (or failed).
func (o *execOutput) started() {
	for _, w := range []*os.File{o.outW, o.errW} {
		if w != nil {
			_ = w.Close()
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
// read ends. An error means poll failed; exited has been called then too.
func (o *execOutput) collect(l leader, exited func()) error {
	defer o.close()
	exitFD, owned, err := l.exitFD()
	if err != nil {
		exited()
		return err
	}
	if owned {
		defer unix.Close(exitFD)
	}
	fds := []unix.PollFd{{Fd: int32(exitFD), Events: unix.POLLIN}, {Fd: int32(o.fds[0]), Events: unix.POLLIN}, {Fd: int32(o.fds[1]), Events: unix.POLLIN}}
	bufs := []*capBuffer{&o.stdout, &o.stderr}
	var exitedAt time.Time
	for fds[1].Fd >= 0 || fds[2].Fd >= 0 || exitedAt.IsZero() {
		timeout := -1
		if !exitedAt.IsZero() {
			left := drainBound - time.Since(exitedAt)
			if left <= 0 {
				return nil
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		if _, err := unix.Poll(fds, timeout); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if exitedAt.IsZero() {
				exited()
			}
			return os.NewSyscallError("poll", err)
		}
		for i := 1; i < len(fds); i++ {
			if fds[i].Fd >= 0 && fds[i].Revents != 0 && bufs[i-1].readFD(int(fds[i].Fd)) {
				_ = unix.Close(int(fds[i].Fd))
				fds[i].Fd, o.fds[i-1] = -1, -1
			}
		}
		if fds[0].Fd >= 0 && fds[0].Revents != 0 {
			exited()
			exitedAt, fds[0].Fd = time.Now(), -1
		}
	}
	return nil
}

// readFD reads once from fd, which poll reported ready, and reports whether the stream
// has ended.
//
// The first read goes to the stack and only what it got is kept: most commands write
// nothing or little to one of their streams, and a 512-byte buffer made up front for
// each stream was 1 KiB of an exec's ~8 KiB of garbage (BENCHMARKS.md, "#14, fourth
// pass").
func (c *capBuffer) readFD(fd int) (ended bool) {
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
	case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
		return false
	case err != nil:
		return true
	}
	return n == 0
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
