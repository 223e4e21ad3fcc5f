package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// WinSize is a terminal size in character cells.
type WinSize struct{ Cols, Rows uint16 }

// StartOptions are the settings of a process started with Sandbox.Start.
type StartOptions struct {
	// ID is the process id; "" makes "proc_" + 16 hex digits. A given id must be 1-63
	// chars of [a-z0-9_-] and not in use.
	ID string
	// Command is run by /bin/sh -c. Exactly one of Command and Argv is set.
	Command string
	// Argv is run directly.
	Argv []string
	// Cwd is relative to the workspace, or absolute inside it; "" is the workspace.
	Cwd string
	// SessionCwd, when set, is the cwd of the session the process starts from, as
	// its shell saw it (SessionSnapshot.Cwd). Unlike Cwd it may lie outside the
	// workspace, since the shell may cd anywhere it can. It wins over Cwd while it
	// names a directory; once it does not (removed since), Cwd applies, as when a
	// session's shell is restarted from its snapshot.
	SessionCwd string
	// Env is overlaid on the sandbox env.
	Env map[string]string
	// PTY puts the process on a PTY of this size. nil means pipes: stdout and stderr
	// are separate streams and stdin is a pipe. Each stream is in order, but how the
	// two interleave in the ring is how they were read, not exactly how they were
	// written.
	PTY *WinSize
	// Tag, Label and Session are recorded for listing only.
	Tag, Label, Session string
	// Timeout kills the tree with SIGKILL when it passes; 0 means none.
	Timeout time.Duration
	// Keep is how long the exited record stays listed; 0 means DefaultKeep.
	Keep time.Duration
}

// readBufBytes is the read buffer of each output reader.
const readBufBytes = 16 << 10

// Start starts a long-lived process in its own process group (a new session for a PTY)
// and returns at once. Its output goes to the process's ring. It returns
// ErrTooManyProcesses when Config.MaxProcesses are running, ErrInvalid for bad options
// or a program that cannot be started, ErrDuplicateID and ErrClosed.
func (s *Sandbox) Start(ctx context.Context, o StartOptions) (*Process, error) {
	p, err := s.start(ctx, o, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to start process: %w", err)
	}
	return p, nil
}

// start starts a process; env layers go between the sandbox env and o.Env.
func (s *Sandbox) start(ctx context.Context, o StartOptions, envMid map[string]string) (*Process, error) {
	argv, err := commandArgv(o.Command, o.Argv)
	if err != nil {
		return nil, err
	}
	dir, err := s.resolveCwd(o.Cwd)
	if err != nil {
		return nil, err
	}
	if o.SessionCwd != "" {
		if p, ok := s.snapshotDir(o.SessionCwd); ok {
			dir = p
		}
	}
	if o.ID != "" && !ValidID(o.ID) {
		return nil, fmt.Errorf("%w: bad process id %q", ErrInvalid, o.ID)
	}
	if o.PTY != nil && (o.PTY.Cols == 0 || o.PTY.Rows == 0) {
		return nil, fmt.Errorf("%w: pty size must be positive", ErrInvalid)
	}
	id := o.ID
	if id == "" {
		id = newProcessID()
	}
	if err := s.reserve(id); err != nil {
		return nil, err
	}
	p, err := s.spawn(ctx, id, argv, dir, o, envMid)
	if err != nil {
		s.unreserve(id, nil)
		// Said as a shell says it, whatever the driver's words: a client (the CLI's
		// exec) tells these two apart and exits 127 or 126 as a shell would.
		switch {
		case errors.Is(err, os.ErrPermission):
			err = fmt.Errorf("%w: %s: permission denied (%v)", ErrInvalid, argv[0], err)
		case errors.Is(err, syscall.ENOEXEC):
			err = fmt.Errorf("%w: %s: cannot execute (%v)", ErrInvalid, argv[0], err)
		case errors.Is(err, syscall.E2BIG), errors.Is(err, syscall.ENAMETOOLONG):
			// Past the kernel's bounds: the arguments and environment together
			// (ARG_MAX), or a path name.
			err = fmt.Errorf("%w: %s: %v", ErrInvalid, argv[0], err)
		case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
			err = fmt.Errorf("%w: %s: command not found (%v)", ErrInvalid, argv[0], err)
		}
		return nil, err
	}
	s.unreserve(id, p)
	return p, nil
}

// reserve claims id and a running slot, and registers the watcher goroutines of the
// process about to start so that Close waits for them.
func (s *Sandbox) reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.procs[id] != nil || s.pending[id]:
		return fmt.Errorf("%w: %q", ErrDuplicateID, id)
	case s.cfg.MaxProcesses > 0 && s.running >= s.cfg.MaxProcesses:
		return fmt.Errorf("%w: %d running", ErrTooManyProcesses, s.running)
	}
	s.pending[id] = true
	s.running++
	s.wg.Add(1)
	return nil
}

// unreserve ends a reservation: with p the process is listed, without it the slot is
// given back.
func (s *Sandbox) unreserve(id string, p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
	if p == nil {
		s.running--
		s.wg.Done()
		return
	}
	s.procs[id] = p
	s.order = append(s.order, p)
	if s.closed {
		// Close ran while this process was starting and did not see it.
		_ = p.g.signal(syscall.SIGKILL)
	}
}

func (s *Sandbox) spawn(ctx context.Context, id string, argv []string, dir string, o StartOptions, envMid map[string]string) (*Process, error) {
	tree, err := s.cg.newTree()
	if err != nil {
		return nil, err
	}
	out := newRing(s.cfg.OutputBufferBytes)
	if o.PTY != nil {
		out = newTextRing(s.cfg.OutputBufferBytes) // a terminal's output is text to its clients
	}
	p := &Process{
		sb: s, id: id, argv: o.Argv, cwd: s.guestPath(dir), tag: o.Tag, label: o.Label,
		session: o.Session, created: time.Now().UTC(), isPTY: o.PTY != nil,
		g: &procGroup{session: o.PTY != nil, cg: tree}, ring: out,
		done: make(chan struct{}), writing: make(chan struct{}, 1),
	}
	if o.Command != "" {
		p.command, p.argv = o.Command, nil
	}
	sp := &spawn{argv: argv, dir: dir, env: s.environ(envMid, o.Env), pty: o.PTY, tree: tree}
	l, outputs, err := p.startLeader(ctx, sp)
	if err != nil {
		tree.remove()
		return nil, err
	}
	p.pid = l.pid()
	p.g.setLeader(l)
	keep := o.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	go p.watch(l, outputs, o.Timeout, keep)
	return p, nil
}

// startLeader starts sp on a PTY, or on pipes when sp.pty is nil, and returns the
// leader and the outputs to read.
func (p *Process) startLeader(ctx context.Context, sp *spawn) (leader, []output, error) {
	if sp.pty != nil {
		l, err := p.sb.h.start(ctx, sp)
		if err != nil {
			return nil, nil, err
		}
		p.master, p.stdin, p.cols, p.rows = sp.master, sp.master, sp.pty.Cols, sp.pty.Rows
		return l, []output{{StreamPTY, sp.master}}, nil
	}
	files, err := pipes(3)
	if err != nil {
		return nil, nil, err
	}
	sp.stdin, sp.stdout, sp.stderr = files[0], files[3], files[5]
	l, err := p.sb.h.start(ctx, sp)
	closeAll(files[0], files[3], files[5])
	if err != nil {
		closeAll(files[1], files[2], files[4])
		return nil, nil, err
	}
	p.stdin = files[1]
	return l, []output{{StreamStdout, files[2]}, {StreamStderr, files[4]}}, nil
}

// output is one stream of a process and the file it is read from.
type output struct {
	stream Stream
	f      *os.File
}

// pipes makes n pipes and returns their ends as read, write, read, write, ...
func pipes(n int) ([]*os.File, error) {
	files := make([]*os.File, 0, 2*n)
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(files...)
			return nil, err
		}
		files = append(files, r, w)
	}
	return files, nil
}

// watch owns a started process: it reads its outputs into the ring, enforces the
// timeout, and on exit kills what is left of the tree, reads the outputs to their end
// (bounded), reaps the process and publishes the exit. It runs on its own goroutine,
// counted in s.wg.
func (p *Process) watch(l leader, outputs []output, timeout, keep time.Duration) {
	defer p.sb.wg.Done()
	files := make([]*os.File, len(outputs))
	fns := make([]func(), len(outputs))
	stop := newStopper()
	for i, o := range outputs {
		files[i] = o.f
		fns[i] = func() { p.readOutput(o, stop) }
	}
	readers := goAll(fns...)
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { _ = p.g.signal(syscall.SIGKILL) })
		defer t.Stop()
	}
	l.awaitExit()
	if p.master == nil {
		// Nobody can read it any more. Closed before the group is marked reaped, so a
		// CloseStdin that finds it closed (ErrExited) is all one sees once it is.
		_ = p.stdin.Close()
	}
	p.g.finish()
	st := l.reap()
	p.g.cg.remove() // finish killed the whole tree: wait until it is gone
	drain(readers, stop.stop, p.ring.heldFor, files...)
	stop.close()
	closeAll(files...)
	p.publishExit(st.exitStatus(), keep)
}

// publishExit records the exit, wakes subscribers and waiters, frees the running slot
// and schedules the record's removal after keep.
func (p *Process) publishExit(st ExitStatus, keep time.Duration) {
	p.mu.Lock()
	p.exit, p.exitedAt = &st, time.Now().UTC()
	p.mu.Unlock()
	p.ring.close(st)
	s := p.sb
	s.mu.Lock()
	s.running--
	if !s.closed {
		p.keep = time.AfterFunc(keep, func() { s.drop(p) })
	}
	s.mu.Unlock()
	close(p.done)
}

// drain waits for the readers of files to reach EOF, for at most drainBound of time
// they spend reading (time spent waiting for a holding subscriber, as reported by held,
// does not count: that output is still being delivered, and each wait is bounded by the
// holder's bound); then it calls stop (if not nil) and makes their reads fail so they
// return. done is closed when the readers are finished.
func drain(done <-chan struct{}, stop func(), held func() time.Duration, files ...*os.File) {
	select {
	case <-done: // the usual case: the tree is dead and the pipes are at EOF
		return
	default:
	}
	began, held0 := time.Now(), held()
	t := time.NewTimer(drainBound)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		used := time.Since(began) - (held() - held0)
		if used >= drainBound {
			break
		}
		t.Reset(drainBound - used)
	}
	if stop != nil {
		stop()
	}
	for _, f := range files {
		_ = f.SetReadDeadline(time.Now())
	}
	<-done
}

// goAll runs each of fns on a goroutine of its own and returns a channel that is closed
// once all of them have returned.
func goAll(fns ...func()) <-chan struct{} {
	done := make(chan struct{})
	if len(fns) == 0 {
		close(done)
		return done
	}
	var left atomic.Int32
	left.Store(int32(len(fns)))
	for _, f := range fns {
		go func() {
			f()
			if left.Add(-1) == 0 {
				close(done)
			}
		}()
	}
	return done
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
