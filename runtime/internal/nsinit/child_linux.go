package nsinit

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Child is a process spawned by an Init. Its methods are safe for concurrent use.
type Child struct {
	in      *Init
	id      uint64
	pid     int
	hostPID int
	done    chan struct{}
	status  ExitStatus
	err     error
	pidFD   int    // the process's pidfd from the init, or -1; closed by finish (under the Init's mu)
	name    string // argv[0], for a NoWait start's error
	noWait  bool   // SpawnRequest.NoWait: started without an answer
}

// Spawn asks the init to start a process and waits, bounded by ctx, until it has
// started. The stdio files are duplicated into the init (the caller still owns and
// closes its own, and must not close them during the call) and, as with os/exec, left
// in blocking mode. If ctx ends first the process may still start; Close ends it.
func (in *Init) Spawn(ctx context.Context, req SpawnRequest) (*Child, error) {
	fr := &frame{Op: opSpawn, Argv: req.Argv, Env: req.Env, Dir: req.Dir, Session: req.Session, TTY: req.TTY != nil,
		Extra: len(req.Extra), Cgroup: req.Cgroup != nil, CgroupDir: req.CgroupDir != nil, Status: req.Status != nil, NoWait: req.NoWait,
		Lease: in.lease.until.Load()}
	if len(req.Argv) == 0 {
		return nil, fmt.Errorf("failed to spawn: %w: empty argv", ErrInvalidRequest)
	}
	if req.NoWait && req.Status == nil {
		return nil, fmt.Errorf("failed to spawn: %w: NoWait without Status", ErrInvalidRequest)
	}
	if req.CgroupDir != nil && req.Cgroup == nil {
		return nil, fmt.Errorf("failed to spawn: %w: CgroupDir without Cgroup", ErrInvalidRequest)
	}
	// On the stack for a spawn's usual few files (stdio, the tree's cgroup, the status
	// pipe): they and their fds were two or three allocations of every exec.
	var filesBuf [8]*os.File
	files := filesBuf[:0]
	if req.TTY != nil {
		files = append(files, req.TTY)
	} else {
		files = append(files, req.Stdin, req.Stdout, req.Stderr)
	}
	for _, f := range req.Extra {
		if f == nil {
			return nil, fmt.Errorf("failed to spawn: %w: nil extra file", ErrInvalidRequest)
		}
	}
	files = append(files, req.Extra...)
	if req.Cgroup != nil {
		files = append(files, req.Cgroup)
	}
	if req.CgroupDir != nil {
		files = append(files, req.CgroupDir)
	}
	if req.Status != nil {
		files = append(files, req.Status)
	}
	in.nullMu.RLock() // the /dev/null fd stays open until the request is sent
	defer in.nullMu.RUnlock()
	var fdsBuf [8]int
	fds := fdsBuf[:0]
	if len(files) > len(fdsBuf) {
		fds = make([]int, 0, len(files))
	}
	fds = fds[:len(files)]
	for i, f := range files {
		if f == nil {
			null, err := in.devNull()
			if err != nil {
				return nil, err
			}
			fds[i] = null
			continue
		}
		// Fd puts the file in blocking mode, as os/exec does: the process shares the
		// open file description, and most programs do not expect O_NONBLOCK.
		fds[i] = int(f.Fd())
	}
	ch := &Child{in: in, done: make(chan struct{}), pidFD: -1, name: req.Argv[0], noWait: req.NoWait}
	if req.NoWait {
		if err := in.post(fr, fds, ch); err != nil {
			return nil, fmt.Errorf("failed to spawn %s: %w", req.Argv[0], err)
		}
		return ch, nil
	}
	r, err := in.request(ctx, fr, fds, ch)
	if err != nil {
		return nil, fmt.Errorf("failed to spawn %s: %w", req.Argv[0], err)
	}
	if r.Op != opStarted {
		return nil, fmt.Errorf("failed to spawn %s: %w", req.Argv[0], startError(r))
	}
	ch.pid, ch.hostPID = r.PID, r.hostPID
	return ch, nil
}

// startError is the cause of a failed start as the init reported it.
func startError(r *frame) error {
	if r.Err == ErrLeaseExpired.Error() {
		return ErrLeaseExpired
	}
	return errnoError(r)
}

// PID returns the process's pid inside the sandbox.
func (ch *Child) PID() int { return ch.pid }

// HostPID returns the process's pid on the host, or 0 if the kernel did not say.
func (ch *Child) HostPID() int { return ch.hostPID }

// finish records how the child ended; called once, with the Init's mu held.
func (ch *Child) finish(st ExitStatus, err error) {
	ch.status, ch.err = st, err
	if ch.pidFD >= 0 {
		_ = unix.Close(ch.pidFD)
		ch.pidFD = -1
	}
	close(ch.done)
}

// Exited reports whether the process has exited: its exit was reported, or its pidfd
// says so (the init is then about to reap it, killing what is left of its group and
// session first).
func (ch *Child) Exited() bool {
	// Under mu, which finish holds while it closes the pidfd and done: a report
	// that arrives meanwhile is seen in done, not missed between the two.
	ch.in.mu.Lock()
	defer ch.in.mu.Unlock()
	select {
	case <-ch.done:
		return true
	default:
	}
	if ch.pidFD < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(ch.pidFD), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&unix.POLLIN != 0
}

// ExitFD returns an fd, close-on-exec, that becomes readable (POLLIN; POLLHUP for the
// pipe below) once the process has exited; the caller closes it. It is the process's pidfd, passed on by the init,
// so a poll on it wakes when the process ends rather than when the init's report
// arrives (Wait still waits for that report, which carries the status). Without a
// pidfd (after the exit was reported, or on a kernel without pidfds) it is a pipe
// whose write end is closed when Done is.
func (ch *Child) ExitFD() (int, error) {
	ch.in.mu.Lock()
	if ch.pidFD >= 0 {
		fd, err := unix.FcntlInt(uintptr(ch.pidFD), unix.F_DUPFD_CLOEXEC, 0)
		ch.in.mu.Unlock()
		if err != nil {
			return -1, os.NewSyscallError("fcntl", err)
		}
		return fd, nil
	}
	ch.in.mu.Unlock()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, os.NewSyscallError("pipe2", err)
	}
	go func() {
		<-ch.done
		_ = unix.Close(p[1])
	}()
	return p[0], nil
}

// Finish records st, read from the Status pipe of a NoWait spawn (ReadStatus), as how
// the process ended: the init sends no exit frame for such a process, its pipe is the
// one report (one message per exec instead of two, and no wake-up of the Init's
// reader goroutine). Wait then returns st, and the Init forgets the child. Finish does
// nothing once the child's end is known otherwise (the init went away, say); on a
// child that is not NoWait it only brings that end forward.
func (ch *Child) Finish(st ExitStatus) {
	ch.in.mu.Lock()
	defer ch.in.mu.Unlock()
	if ch.in.children[ch.id] != ch {
		return // finished already: by an exit frame, a failed start or the init's end
	}
	delete(ch.in.children, ch.id)
	ch.finish(st, nil)
}

// Done returns a channel closed once Wait would not block.
func (ch *Child) Done() <-chan struct{} { return ch.done }

// Wait waits, bounded by ctx, until the process exits, and returns how. If the init
// went away first it returns ErrClosed or ErrInitExited.
func (ch *Child) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-ch.done:
		return ch.status, ch.err
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

// Signal sends sig to the process's process group (it leads one, or a session). It
// returns ErrExited once the exit was reported.
func (ch *Child) Signal(ctx context.Context, sig syscall.Signal) error {
	select {
	case <-ch.done:
		return ErrExited
	default:
	}
	r, err := ch.in.request(ctx, &frame{Op: opSignal, Target: ch.id, Sig: int(sig)}, nil, nil)
	if err != nil {
		return fmt.Errorf("failed to signal: %w", err)
	}
	if r.Op == opError && r.Err == ErrExited.Error() {
		return ErrExited
	}
	if r.Op == opError {
		return fmt.Errorf("failed to signal: %w", errnoError(r))
	}
	return nil
}

// devNull returns the Init's /dev/null (read-write), opened at the first spawn that
// needs it and closed by Close: an exec without input would otherwise open and close
// it every time. The caller holds nullMu for reading, so Close cannot close it
// meanwhile.
func (in *Init) devNull() (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.err != nil {
		return -1, in.err // closed: Close may have closed null already
	}
	if in.null < 0 {
		fd, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("failed to open %s: %w", os.DevNull, err)
		}
		in.null = fd
	}
	return in.null, nil
}
