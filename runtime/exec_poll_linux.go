package runtime

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// maxSparePolls bounds the emptied epoll instances a sandbox keeps, one per exec that
// ran at once, up to this many.
const maxSparePolls = 8

// execPoll is an epoll instance an exec waits on (execOutput.collect), as a file that
// waits in the runtime's poller.
type execPoll struct {
	f  *os.File
	fd int // f's fd, which f owns
}

// execPollExit is the exit fd's key in an exec's epoll instance; 0 and 1 are stdout
// and stderr.
const execPollExit = 2

// execPolls keeps the emptied epoll instances of finished execs for the next ones.
// Making one per exec took six syscalls (create, a flag set and read, the poller's
// registration and removal, the close) and a file; reusing it takes a removal of each
// stream's read end before it is closed. The removal cannot be left to the close: a
// fork of this process in progress (os/exec, on another goroutine) holds a copy of
// every fd until its child executes, and an fd's registration goes only with the last
// copy, so a closed pipe could still be reported to the exec that uses the instance
// next. The exit fd needs no removal: it is watched once (EPOLLONESHOT), and once it
// reported it is never reported again, whoever holds a copy.
//
// The zero value is ready to use; execPolls is safe for concurrent use. close, at the
// sandbox's close, closes the instances kept and those put back later.
type execPolls struct {
	mu     sync.Mutex
	free   []execPoll
	closed bool
}

// get returns a kept instance, or a new one.
func (p *execPolls) get() (execPoll, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		ep := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return ep, nil
	}
	p.mu.Unlock()
	return newExecPoll()
}

// put keeps ep for another exec if it is empty (clean: nothing registered that can
// report, and no read deadline) and there is room, or else closes it.
func (p *execPolls) put(ep execPoll, clean bool) {
	if clean {
		p.mu.Lock()
		if !p.closed && len(p.free) < maxSparePolls {
			p.free = append(p.free, ep)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	_ = ep.f.Close()
}

// close closes the kept instances; instances put back later are closed at once.
func (p *execPolls) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, ep := range free {
		_ = ep.f.Close()
	}
}

// newExecPoll makes an epoll instance that waits in the runtime's poller.
func newExecPoll() (execPoll, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return execPoll{}, os.NewSyscallError("epoll_create1", err)
	}
	// Non-blocking, so that os.NewFile puts it in the poller; its only flag was O_RDWR,
	// which F_SETFL leaves alone.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		_ = unix.Close(fd)
		return execPoll{}, os.NewSyscallError("fcntl", err)
	}
	return execPoll{f: os.NewFile(uintptr(fd), "exec-poll"), fd: fd}, nil
}

// watch adds the exit fd, reported once, and the two read ends. On error the caller
// must not put ep back as clean.
func (ep execPoll) watch(exitFD int, fds [2]int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: execPollExit}
	if err := unix.EpollCtl(ep.fd, unix.EPOLL_CTL_ADD, exitFD, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return os.NewSyscallError("epoll_ctl", err)
		}
	}
	return nil
}

// unwatch takes fd out of the instance and reports whether it did.
func (ep execPoll) unwatch(fd int) bool {
	return unix.EpollCtl(ep.fd, unix.EPOLL_CTL_DEL, fd, nil) == nil
}
