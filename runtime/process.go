package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Status is the state of a process.
type Status string

// Process states.
const (
	// StatusRunning is a process that has not exited yet.
	StatusRunning Status = "running"
	// StatusExited is a process whose exit was published (all output read).
	StatusExited Status = "exited"
)

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or -1 when the process was killed by a signal.
	Code int
	// Signal is the name of the signal that killed the process ("SIGKILL"), or "".
	Signal string
}

// ProcessInfo is a snapshot of a process.
type ProcessInfo struct {
	ID      string
	Command string
	Argv    []string
	Cwd     string
	PID     int
	PTY     bool
	Cols    uint16
	Rows    uint16
	Tag     string
	Label   string
	Session string
	Status  Status
	// Exit is nil while the process runs.
	Exit      *ExitStatus
	CreatedAt time.Time
	ExitedAt  *time.Time
	// OutputOffset is the offset after the last output byte.
	OutputOffset int64
	// OutputDropped is how many of the oldest output bytes left the ring.
	OutputDropped int64
}

// Process is a running or exited process of a sandbox, with its output ring.
//
// All methods are safe for concurrent use. The process is watched by goroutines owned by
// its Sandbox: they read its output into the ring and publish its exit.
type Process struct {
	sb      *Sandbox
	id      string
	command string
	argv    []string
	cwd     string
	pid     int
	isPTY   bool
	tag     string
	label   string
	session string
	created time.Time

	g        *procGroup
	ring     *ring
	done     chan struct{}
	attached atomic.Int32

	stdin   *os.File      // pipe write end, or the PTY master
	master  *os.File      // nil without a PTY
	writing chan struct{} // holds a token while a write to stdin is in progress
	// writeDeadline says a write deadline is set on stdin; guarded by the token.
	writeDeadline bool

	mu          sync.Mutex
	cols, rows  uint16
	stdinClosed bool
	exit        *ExitStatus
	exitedAt    time.Time
	keep        *time.Timer // guarded by sb.mu
}

// ID returns the process id.
func (p *Process) ID() string { return p.id }

// Info returns a snapshot of the process.
func (p *Process) Info() ProcessInfo {
	start, end := p.ring.offsets()
	p.mu.Lock()
	defer p.mu.Unlock()
	info := ProcessInfo{
		ID: p.id, Command: p.command, Argv: append([]string(nil), p.argv...), Cwd: p.cwd,
		PID: p.pid, PTY: p.isPTY, Cols: p.cols, Rows: p.rows, Tag: p.tag, Label: p.label,
		Session: p.session, Status: StatusRunning, CreatedAt: p.created,
		OutputOffset: end, OutputDropped: start,
	}
	if p.exit != nil {
		e, t := *p.exit, p.exitedAt
		info.Status, info.Exit, info.ExitedAt = StatusExited, &e, &t
	}
	return info
}

// Done returns a channel closed once the exit is published, after all output was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns how it ended.
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.exit, nil
}

// Signal sends sig to the process group. On a PTY it also goes to the terminal's
// foreground job when that is another group (an interactive shell runs each job in a
// group of its own), as a key like ^C would. It returns ErrExited once the process has
// exited.
func (p *Process) Signal(sig syscall.Signal) error {
	fg := 0
	if p.master != nil {
		fg = foregroundGroup(p.master)
	}
	if err := p.g.signalGroups(sig, fg); err != nil {
		return fmt.Errorf("failed to signal process %s: %w", p.id, err)
	}
	return nil
}

// Kill ends the process tree: SIGTERM (with SIGHUP first on a PTY) to the group, SIGKILL after the sandbox's
// KillGrace, and waits for the exit. Killing an exited process is a no-op. If ctx ends
// first the tree is sent SIGKILL and ctx's error returned.
func (p *Process) Kill(ctx context.Context) error {
	// A PTY process also gets hung up, as when its terminal closes: an interactive shell
	// ignores SIGTERM. The hangup is repeated while waiting, because bash can take one
	// just before it blocks in readline's select and only acts on it when another
	// signal interrupts that select.
	var rehup <-chan time.Time
	if p.isPTY {
		_ = p.g.signal(syscall.SIGHUP)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		rehup = tk.C
	}
	if p.g.signal(syscall.SIGTERM) == nil {
		t := time.NewTimer(p.sb.cfg.KillGrace)
		defer t.Stop()
	wait:
		for {
			select {
			case <-p.done:
				return nil
			case <-rehup:
				_ = p.g.signal(syscall.SIGHUP)
			case <-t.C:
				break wait
			case <-ctx.Done():
				break wait
			}
		}
		_ = p.g.signal(syscall.SIGKILL)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DefaultInputTimeout bounds Process.Write and Process.CloseStdin: how long input may
// wait for a process that does not read it.
const DefaultInputTimeout = 5 * time.Second

// Write writes b to the process's stdin (the PTY master for a PTY), waiting at most
// DefaultInputTimeout for the process to take it (see WriteContext).
func (p *Process) Write(b []byte) (int, error) {
	return p.WriteContext(context.Background(), b, DefaultInputTimeout)
}

// WriteContext writes b to the process's stdin (the PTY master for a PTY). It waits
// while the process does not read, until ctx ends or timeout (0: no bound but ctx)
// passes: then it returns how much was written and ErrInputBlocked. Writes go to the
// process one at a time, in turn; a writer waiting for its turn gives up within its
// own bound too, so a stuck writer never holds the others up for longer than theirs,
// and never blocks reads, signals, resizes or Info. Input the process takes at once
// (a keystroke) costs no timer. It returns ErrExited after exit and ErrStdinClosed
// after CloseStdin.
func (p *Process) WriteContext(ctx context.Context, b []byte, timeout time.Duration) (int, error) {
	p.mu.Lock()
	exited, closed := p.exit != nil, p.stdinClosed
	p.mu.Unlock()
	switch {
	case exited:
		return 0, ErrExited
	case closed:
		return 0, ErrStdinClosed
	}
	n, err := p.writeInput(ctx, b, timeout)
	if err != nil {
		switch {
		case errors.Is(err, ErrInputBlocked):
			return n, fmt.Errorf("failed to write stdin: %w (%d of %d bytes written)", err, n, len(b))
		case p.exitedOrGone() || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EIO):
			return n, ErrExited
		case errors.Is(err, os.ErrClosed):
			return n, ErrStdinClosed
		}
		return n, fmt.Errorf("failed to write stdin: %w", err)
	}
	return n, nil
}

// writeInput writes b to stdin in its turn, within ctx and timeout. It first writes
// what the process takes at once; only then, with the rest, does it arm a deadline
// (stdin is non-blocking, on Go's poller), which ctx ending moves to the past.
func (p *Process) writeInput(ctx context.Context, b []byte, timeout time.Duration) (int, error) {
	var deadline time.Time // set once something waits
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	select {
	case p.writing <- struct{}{}:
	default:
		if err := p.waitTurn(ctx, deadline); err != nil {
			return 0, err
		}
	}
	defer func() { <-p.writing }()
	if p.writeDeadline {
		_ = p.stdin.SetWriteDeadline(time.Time{}) // the last slow writer's, maybe expired
		p.writeDeadline = false
	}
	n, err := tryWrite(p.stdin, b)
	if err != nil || n == len(b) {
		return n, err
	}
	if ctx.Err() != nil {
		return n, ErrInputBlocked
	}
	_ = p.stdin.SetWriteDeadline(deadline)
	p.writeDeadline = true
	if ctx.Done() != nil {
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(fired)
			_ = p.stdin.SetWriteDeadline(time.Unix(1, 0))
		})
		defer func() {
			if !stop() {
				<-fired // the deadline is set: the next writer replaces it
			}
		}()
	}
	m, err := p.stdin.Write(b[n:])
	n += m
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, ErrInputBlocked
	}
	return n, err
}

// waitTurn waits for the write token, until ctx ends or deadline (if set) passes.
func (p *Process) waitTurn(ctx context.Context, deadline time.Time) error {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case p.writing <- struct{}{}:
		return nil
	case <-expired:
	case <-ctx.Done():
	}
	return ErrInputBlocked
}

// exitedOrGone reports whether the leader has exited (perhaps not yet published).
func (p *Process) exitedOrGone() bool {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	return p.g.reaped
}

// CloseStdin ends the process's input: it closes the stdin pipe, or on a PTY sends the
// terminal's EOF character (^D), which a reader at the start of a line sees as EOF,
// waiting at most DefaultInputTimeout for the process to take it (ErrInputBlocked).
// Later Writes return ErrStdinClosed.
func (p *Process) CloseStdin() error {
	p.mu.Lock()
	switch {
	case p.exit != nil:
		p.mu.Unlock()
		return ErrExited
	case p.stdinClosed:
		p.mu.Unlock()
		return nil
	}
	if p.master == nil {
		p.stdinClosed = true
		p.mu.Unlock()
		if err := p.stdin.Close(); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return ErrExited // watch closed it: the process exited, its exit not yet published
			}
			return fmt.Errorf("failed to close stdin: %w", err)
		}
		return nil
	}
	p.mu.Unlock()
	if _, err := p.writeInput(context.Background(), []byte{eofChar(p.master)}, DefaultInputTimeout); err != nil {
		if errors.Is(err, ErrInputBlocked) {
			return fmt.Errorf("failed to close stdin: %w", err)
		}
		return err
	}
	p.mu.Lock()
	p.stdinClosed = true
	p.mu.Unlock()
	return nil
}

// Resize sets the PTY's window size (TIOCSWINSZ); the foreground job gets SIGWINCH.
// It returns ErrNotPTY for a process with pipes.
func (p *Process) Resize(cols, rows uint16) error {
	if p.master == nil {
		return ErrNotPTY
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		return ErrExited
	}
	if err := setWinsize(p.master, cols, rows); err != nil {
		return fmt.Errorf("failed to resize: %w", err)
	}
	p.cols, p.rows = cols, rows
	return nil
}

// Attached returns the number of open subscriptions.
func (p *Process) Attached() int { return int(p.attached.Load()) }
