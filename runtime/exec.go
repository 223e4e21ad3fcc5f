package runtime

import (
	"bytes"
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
	cmd, err := s.cfg.Driver.Command(ctx, Spec{Argv: argv, Dir: dir, Env: s.environ(o.Env)})
	if err != nil {
		return notStarted(argv[0], err, begin)
	}
	out, err := newExecOutput(limit)
	if err != nil {
		return ExecResult{}, err
	}
	cmd.Stdout, cmd.Stderr = out.outW, out.errW
	if o.Stdin != nil {
		cmd.Stdin = bytes.NewReader(o.Stdin)
	}
	setpgid(cmd)
	tree, err := s.cg.newTree()
	if err != nil {
		out.started()
		out.close()
		return ExecResult{}, err
	}
	tree.attach(cmd)

	g := &procGroup{cg: tree}
	if !s.enterExec(g) {
		tree.remove()
		out.started()
		out.close()
		return ExecResult{}, ErrClosed
	}
	defer s.leaveExec(g)
	defer tree.remove() // once the tree is dead (and before Close may go on): waits for its group to empty
	err = s.cg.startIn(tree, cmd, cmd.Start)
	out.started()
	if err != nil {
		out.close()
		return notStarted(argv[0], err, begin)
	}
	g.setPID(cmd.Process.Pid)

	var timedOut atomic.Bool
	if o.Timeout > 0 {
		t := time.AfterFunc(o.Timeout, func() { g.killFor(&timedOut) })
		defer t.Stop()
	}
	var canceled atomic.Bool
	stop := context.AfterFunc(ctx, func() { g.killFor(&canceled) })
	defer stop()

	waitErr := out.collect(cmd.Process.Pid, func() {
		g.finish()                 // kill what the command left behind, before the pid can be recycled
		cmd.WaitDelay = drainBound // bounds the stdin copier if an escaped child holds stdin
		_ = cmd.Wait()
	})
	state := cmd.ProcessState
	if state == nil {
		return ExecResult{}, fmt.Errorf("failed to wait: %w", waitErr)
	}

	res := ExecResult{
		ExitCode:  exitCode(state),
		Stdout:    out.stdout.buf,
		Stderr:    out.stderr.buf,
		Duration:  time.Since(begin),
		Truncated: out.stdout.truncated || out.stderr.truncated,
	}
	if timedOut.Load() {
		res.TimedOut, res.ExitCode = true, exitTimedOut
	}
	if res.Stdout == nil {
		res.Stdout = []byte{}
	}
	if res.Stderr == nil {
		res.Stderr = []byte{}
	}
	if canceled.Load() && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
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
	case errors.Is(err, ErrInvalid):
		return ExecResult{}, err
	}
	return ExecResult{
		ExitCode: code,
		Stdout:   []byte{},
		Stderr:   []byte(argv0 + ": " + reason + "\n"),
		Duration: time.Since(begin),
	}, nil
}

// exitCode returns the shell's view of state: the exit status, or 128+n for signal n.
func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
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
