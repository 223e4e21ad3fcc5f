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

const (
	sigKILL = syscall.SIGKILL
	// drainBound is how long output is still read after a process exited and its group
	// was killed. Killed processes close their pipes at once; the bound only matters when
	// something outside the group (a setsid'd grandchild, without containment) still
	// holds the write end.
	drainBound = time.Second
	// exitTimedOut is the exit code of a command killed at its timeout, like timeout(1).
	exitTimedOut = 124
)

// ExecOptions are the settings of one Sandbox.Exec call.
type ExecOptions struct {
	// Command is run by /bin/sh -c. Exactly one of Command and Argv is set.
	Command string
	// Argv is run directly; Argv[0] is looked up in the PATH of the environment.
	Argv []string
	// Cwd is relative to the workspace, or absolute inside it; "" is the workspace.
	Cwd string
	// Env is overlaid on the sandbox env.
	Env map[string]string
	// Timeout kills the whole tree when it passes; 0 means none (the caller clamps).
	Timeout time.Duration
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin []byte
	// OutputLimit caps each of stdout and stderr; 0 means Config.OutputBufferBytes.
	OutputLimit int
}

// ExecResult is the outcome of a command.
type ExecResult struct {
	// ExitCode is the exit status; 128+n when killed by signal n; 124 on timeout; 127
	// when the program was not found and 126 when it could not be run.
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	Duration time.Duration
	// TimedOut reports that the timeout killed the tree; ExitCode is then 124.
	TimedOut bool
	// Truncated reports that stdout or stderr went over the output limit and was cut.
	Truncated bool
	// SnapshotErr is set by Session.Exec when the command's cwd and exported env were
	// not taken as the session's snapshot because the env is past the bounds (an
	// *EnvLimitError, matching ErrEnvTooLarge): the command itself ran and this result
	// is whole, but Session.Snapshot still returns the previous command's. Always nil
	// from Sandbox.Exec.
	SnapshotErr error
}

// Exec runs one command to completion and returns its output. The command gets a fresh
// process group; when its main process exits, whatever it left running in the group is
// killed and the call returns. A timeout kills the whole group and keeps the output read
// so far. A program that cannot be started is not an error: the result has exit code 127
// (or 126) and the reason on stderr, like a shell. Errors are for bad options,
// ErrClosed and ctx (the tree is killed first).
func (s *Sandbox) Exec(ctx context.Context, o ExecOptions) (ExecResult, error) {
	res, err := s.exec(ctx, o)
	if err != nil {
		return res, fmt.Errorf("failed to exec: %w", err)
	}
	return res, nil
}

func (s *Sandbox) exec(ctx context.Context, o ExecOptions) (ExecResult, error) {
	argv, err := commandArgv(o.Command, o.Argv)
	if err != nil {
		return ExecResult{}, err
	}
	dir, err := s.resolveCwd(o.Cwd)
	if err != nil {
		return ExecResult{}, err
	}
	limit := o.OutputLimit
	if limit <= 0 {
		limit = s.cfg.OutputBufferBytes
	}
	begin := time.Now()
	// One allocation for what the driver, the timers and Close reach (it was five).
	r := &execRun{}
	out, g, sp := &r.out, &r.g, &r.sp
	if err := out.open(limit); err != nil {
		return ExecResult{}, err
	}
	*sp = spawn{argv: argv, dir: dir, env: s.environ(o.Env), stdout: out.outW, stderr: out.errW, oneShot: true}
	var feed *stdinFeed
	if o.Stdin != nil {
		if feed, err = newStdinFeed(o.Stdin); err != nil {
			out.started()
			out.close()
			return ExecResult{}, err
		}
		defer feed.close()
		sp.stdin = feed.r
	}
	tree, err := s.cg.newTree()
	if err != nil {
		out.started()
		out.close()
		return ExecResult{}, err
	}
	sp.tree = tree

	g.cg = tree
	if !s.enterExec(g) {
		tree.remove()
		out.started()
		out.close()
		return ExecResult{}, ErrClosed
	}
	defer s.leaveExec(g)
	defer tree.remove() // once the tree is dead (and before Close may go on): waits for its group to empty
	l, err := s.h.start(ctx, sp)
	if err != nil {
		out.started()
		out.close()
		return notStarted(argv[0], err, begin)
	}
	// The child's ends stay open here until collect sees the exit (execOutput.started).
	feed.start()
	g.setLeader(l)

	if o.Timeout > 0 {
		t := time.AfterFunc(o.Timeout, func() { r.g.killFor(&r.timedOut) })
		defer t.Stop()
	}
	stop := context.AfterFunc(ctx, func() { r.g.killFor(&r.canceled) })
	defer stop()

	var st waitStatus
	waitErr := out.collect(&s.polls, l, func() {
		g.finish() // kill what the command left behind, before the pid can be recycled
		st = l.reap()
	})
	if !st.ok {
		return ExecResult{}, fmt.Errorf("failed to wait: %w", waitErr)
	}
	if err := l.startErr(); err != nil {
		return notStarted(argv[0], err, begin)
	}

	res := ExecResult{
		ExitCode:  st.shellCode(),
		Stdout:    out.stdout.buf,
		Stderr:    out.stderr.buf,
		Duration:  time.Since(begin),
		Truncated: out.stdout.truncated || out.stderr.truncated,
	}
	if r.timedOut.Load() {
		res.TimedOut, res.ExitCode = true, exitTimedOut
	}
	if res.Stdout == nil {
		res.Stdout = []byte{}
	}
	if res.Stderr == nil {
		res.Stderr = []byte{}
	}
	if r.canceled.Load() && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
}

// execRun is the state of one exec that outlives the call's frame: the driver keeps
// the spawn, Close and the timers reach the group, and collect reads into the output.
type execRun struct {
	g   procGroup
	sp  spawn
	out execOutput
	// timedOut and canceled say why the tree was killed (procGroup.killFor).
	timedOut, canceled atomic.Bool
}

// enterExec registers an exec call so that Close kills its tree and waits for it.
func (s *Sandbox) enterExec(g *procGroup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.execs[g] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Sandbox) leaveExec(g *procGroup) {
	s.mu.Lock()
	delete(s.execs, g)
	s.mu.Unlock()
	s.wg.Done()
}

// notStarted turns a failure to start argv0 into the result a shell would give.
func notStarted(argv0 string, err error, begin time.Time) (ExecResult, error) {
	code, reason := 126, err.Error()
	var pe *os.PathError
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		code, reason = 127, "command not found"
		if errors.As(err, &pe) && pe.Op == "chdir" {
			code, reason = 127, "no such directory"
		}
	case errors.Is(err, os.ErrPermission):
		reason = "permission denied"
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrLeaseExpired):
		return ExecResult{}, err
	}
	return ExecResult{
		ExitCode: code,
		Stdout:   []byte{},
		Stderr:   []byte(argv0 + ": " + reason + "\n"),
		Duration: time.Since(begin),
	}, nil
}

// capBuffer collects up to limit bytes of a stream and discards the rest.
type capBuffer struct {
	limit     int
	buf       []byte
	truncated bool
	discard   []byte
}

// space returns where the next read goes: the free room under the limit, or a scratch
// buffer once the limit is reached (what lands there is dropped).
func (c *capBuffer) space() []byte {
	if len(c.buf) >= c.limit {
		if c.discard == nil {
			c.discard = make([]byte, 32<<10)
		}
		return c.discard
	}
	if len(c.buf) == cap(c.buf) {
		c.buf = append(c.buf, make([]byte, min(max(2*cap(c.buf), 512), c.limit)-len(c.buf))...)[:len(c.buf)]
	}
	return c.buf[len(c.buf):min(cap(c.buf), c.limit)]
}

// wrote records that n bytes were read into the last space.
func (c *capBuffer) wrote(n int) {
	if len(c.buf) >= c.limit {
		c.truncated = c.truncated || n > 0
		return
	}
	c.buf = c.buf[:len(c.buf)+n]
}

// stdinFeed writes an exec's stdin bytes into a pipe whose read end is the command's
// fd 0, from a goroutine, so that a command that reads little or nothing never blocks
// the call. close ends the writer however far it got.
type stdinFeed struct {
	r, w    *os.File
	data    []byte
	started bool
	done    chan struct{}
}

func newStdinFeed(data []byte) (*stdinFeed, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &stdinFeed{r: r, w: w, data: data, done: make(chan struct{})}, nil
}

// start closes the read end (the command has its own) and starts writing. It does
// nothing on a nil feed.
func (f *stdinFeed) start() {
	if f == nil {
		return
	}
	_ = f.r.Close()
	f.started = true
	go func() {
		defer close(f.done)
		_, _ = f.w.Write(f.data) // EPIPE once nothing reads it any more
		_ = f.w.Close()
	}()
}

// close ends the feed: a write still blocked on a full pipe times out at once, and
// the writer has returned when close does.
func (f *stdinFeed) close() {
	if !f.started {
		closeAll(f.r, f.w)
		return
	}
	_ = f.w.SetWriteDeadline(time.Now())
	<-f.done
}
