package runtime

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// execOutput collects an exec's stdout and stderr. The read ends and the child's exit
// fd wait in the runtime's poller (collect), so a command that runs holds no thread.
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
// read ends. An error means waiting failed; exited has been called then too.
//
// The read ends and the exit fd wait in the runtime's poller: a goroutine waiting for a
// command holds no thread and no P, so the server's other goroutines run meanwhile
// without the scheduler first taking a P back from a thread blocked in poll(2).
func (o *execOutput) collect(l leader, exited func()) error {
	exitFD, owned, err := l.exitFD()
	if err == nil && !owned {
		exitFD, err = unix.FcntlInt(uintptr(exitFD), unix.F_DUPFD_CLOEXEC, 0)
		err = os.NewSyscallError("fcntl", err)
	}
	if err != nil {
		o.close()
		exited()
		return err
	}
	exitF, err := pollableFD(exitFD, "exit")
	if err != nil {
		o.close()
		exited()
		return err
	}
	defer exitF.Close()
	var files [2]*os.File
	for i, fd := range o.fds {
		o.fds[i] = -1
		if files[i], err = pollableFD(fd, "output"); err != nil {
			for _, f := range files[:i] {
				f.Close()
			}
			exited()
			return err
		}
	}
	defer files[0].Close()
	defer files[1].Close()
	var drains sync.WaitGroup
	drains.Go(func() { o.stdout.drain(files[0]) })
	drains.Go(func() { o.stderr.drain(files[1]) })
	waitErr := waitReadable(exitF)
	exited()
	end := time.Now().Add(drainBound)
	_ = files[0].SetReadDeadline(end)
	_ = files[1].SetReadDeadline(end)
	drains.Wait()
	return waitErr
}

// pollableFD wraps fd, made non-blocking, in a file that waits in the runtime's poller.
// On error it closes fd.
func pollableFD(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// waitReadable parks until f is readable (for a pidfd: its process exited; for a pipe:
// data or its end), without reading.
func waitReadable(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return n > 0 || (err != nil && !errors.Is(err, unix.EINTR))
	})
}

// drain reads f into c until the stream ends, or a read fails (its deadline passed).
func (c *capBuffer) drain(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for ended := false; !ended; {
		err := rc.Read(func(fd uintptr) bool {
			var again bool
			ended, again = c.readFD(int(fd))
			return !again
		})
		if err != nil {
			return
		}
	}
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
