package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/frame"
)

// Exec runs one command in the session's shell and returns its exit code and its
// stdout and stderr, byte for byte. Calls are served one at a time in arrival order.
//
// A command that times out is not an error: the result has TimedOut, exit code 124 and
// the output so far, and the session is dead. A command that exits the shell returns
// the shell's exit status and leaves the session dead. On a dead session Exec returns
// an error wrapping ErrSessionDead that says why it died.
//
// If ctx ends while the call waits in the queue, the command is dropped and ctx.Err()
// returned. If ctx ends while the command runs, Exec returns ctx.Err() at once but the
// command runs on (to its end or its timeout) and its cwd/env changes are kept.
func (s *Session) Exec(ctx context.Context, c SessionCommand) (ExecResult, error) {
	cwd, err := s.checkCommand(c)
	if err != nil {
		return ExecResult{}, fmt.Errorf("runtime: failed to exec in session %s: %w", s.id, err)
	}
	if err := ctx.Err(); err != nil {
		return ExecResult{}, err
	}
	if s.sb.leaseExpired() {
		// The shell is frozen: the command would wait for a renewal (or its timeout).
		return ExecResult{}, fmt.Errorf("runtime: failed to exec in session %s: %w", s.id, ErrLeaseExpired)
	}
	req := &sessReq{cmd: c, cwd: cwd, done: make(chan sessResult, 1)}
	s.mu.Lock()
	if s.dead != "" {
		err := s.deadErrLocked()
		s.mu.Unlock()
		return ExecResult{}, err
	}
	s.queue = append(s.queue, req)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		s.mu.Lock()
		for i, q := range s.queue {
			if q == req {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		return ExecResult{}, ctx.Err()
	}
}

// checkCommand validates a command and resolves its per-call cwd.
func (s *Session) checkCommand(c SessionCommand) (string, error) {
	if strings.IndexByte(c.Command, 0) >= 0 {
		return "", fmt.Errorf("%w: command holds a NUL byte", ErrInvalid)
	}
	for k, v := range c.Env {
		if !frame.ValidName(k) {
			return "", fmt.Errorf("%w: bad variable name %q", ErrInvalid, k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("%w: value of %s holds a NUL byte", ErrInvalid, k)
		}
	}
	if c.Timeout < 0 || c.OutputLimit < 0 {
		return "", fmt.Errorf("%w: negative timeout or output limit", ErrInvalid)
	}
	if c.Cwd == "" {
		return "", nil
	}
	cwd, err := sessResolveCwd(s.dir, s.sb.guest, c.Cwd)
	if err != nil {
		return "", err
	}
	// Checked here, not left to the shell's cd, so the call is rejected before it is
	// queued and the session is untouched.
	if err := sessCheckDir(cwd, c.Cwd); err != nil {
		return "", err
	}
	return cwd, nil
}

// queued reports how many calls wait for their turn (for tests).
func (s *Session) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// work serves queued requests in order until Close.
func (s *Session) work() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if s.dead != "" {
			s.failQueueLocked()
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.kick:
				continue
			case <-s.closing:
				s.mu.Lock()
				s.failQueueLocked()
				s.mu.Unlock()
				return
			}
		}
		req := s.queue[0]
		s.queue = s.queue[1:]
		s.running = true
		s.mu.Unlock()

		res, err := s.run(req)

		s.mu.Lock()
		s.running = false
		if err == nil {
			now := time.Now()
			s.commands++
			s.lastAt = &now
		}
		s.mu.Unlock()
		req.done <- sessResult{res: res, err: err}
	}
}

func (s *Session) failQueueLocked() {
	for _, q := range s.queue {
		q.done <- sessResult{err: s.deadErrLocked()}
	}
	s.queue = nil
}

// run executes one command: it writes the command file, makes fresh FIFOs for its
// output, sends the command line and waits for the frame, a timeout, the shell's end
// or Close.
func (s *Session) run(req *sessReq) (ExecResult, error) {
	c := req.cmd
	start := time.Now()
	limit := c.OutputLimit
	if limit == 0 {
		limit = s.limit
	}
	if err := sessWriteOwned(s.sb, filepath.Join(s.tmp, "c"), []byte(c.Command)); err != nil {
		return ExecResult{}, fmt.Errorf("runtime: failed to write session command: %w", err)
	}
	out, err := sessOpenStream(s.sb, filepath.Join(s.tmp, "o"), limit)
	if err != nil {
		return ExecResult{}, fmt.Errorf("runtime: failed to make session stdout: %w", err)
	}
	errs, err := sessOpenStream(s.sb, filepath.Join(s.tmp, "e"), limit)
	if err != nil {
		out.finish(0)
		return ExecResult{}, fmt.Errorf("runtime: failed to make session stderr: %w", err)
	}
	result := func(code int) ExecResult {
		r := ExecResult{ExitCode: code}
		var t1, t2 bool
		r.Stdout, t1 = out.finish(sessDrainWait)
		r.Stderr, t2 = errs.finish(sessDrainWait)
		r.Truncated = t1 || t2
		r.Duration = time.Since(start)
		return r
	}

	nonce := sessRandHex(16)
	perCall := req.cwd != "" || len(c.Env) > 0
	if perCall {
		if err := sessWriteOwned(s.sb, filepath.Join(s.tmp, "p"), sessPerCallScript(s.sb.guestPath(req.cwd), c.Env)); err != nil {
			result(-1)
			return ExecResult{}, fmt.Errorf("runtime: failed to write session per-call settings: %w", err)
		}
	}
	if _, err := s.stdin.Write(sessCommandLine(nonce, perCall)); err != nil {
		return s.shellGone(result)
	}
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case b, ok := <-s.ctlCh:
			if !ok {
				return s.shellGone(result)
			}
			fr, done, err := s.framer.take(b, nonce)
			if err != nil {
				s.killTree()
				s.markDead("session protocol error: " + err.Error())
				result(-1)
				return ExecResult{}, fmt.Errorf("%w: %w", ErrSessionDead, err)
			}
			if !done {
				continue
			}
			// A snapshot past the bounds is not taken: the session keeps the one of
			// its last command within them, and the result says so.
			s.mu.Lock()
			s.snapErr = fr.envErr
			if fr.envErr == nil {
				if fr.Cwd != "" {
					s.snap.Cwd = fr.Cwd
				}
				s.snap.Env = fr.Env
			}
			s.mu.Unlock()
			r := result(fr.Status)
			r.SnapshotErr = fr.envErr
			return r, nil
		case <-timeout:
			s.killTree()
			s.markDead(fmt.Sprintf("command timed out after %s", c.Timeout))
			s.waitExited()
			r := result(124)
			r.TimedOut = true
			return r, nil
		case <-s.closing:
			result(-1)
			s.mu.Lock()
			defer s.mu.Unlock()
			return ExecResult{}, s.deadErrLocked()
		}
	}
}

// shellGone handles a shell that ended during a command (exit N, exec, a signal): it
// waits for it, kills what is left and reports its status as the command's.
func (s *Session) shellGone(result func(int) ExecResult) (ExecResult, error) {
	t := time.NewTimer(sessExitWait)
	select {
	case <-s.exited:
	case <-t.C:
		s.killTree() // e.g. the command exec'd something that closed the control fd
	case <-s.closing:
	}
	t.Stop()
	s.waitExited()
	code, reason := -1, "shell ended"
	if st := s.state; st != nil && st.ok {
		switch {
		case st.sig != 0:
			code, reason = st.shellCode(), fmt.Sprintf("shell killed by signal %d (%s)", int(st.sig), st.sig)
		default:
			code, reason = st.code, fmt.Sprintf("shell exited with status %d", st.code)
		}
	}
	s.markDead(reason)
	select {
	case <-s.closing:
		result(-1)
		s.mu.Lock()
		defer s.mu.Unlock()
		return ExecResult{}, s.deadErrLocked()
	default:
	}
	return result(code), nil
}

// waitExited waits for the shell to be reaped; a SIGKILLed process is, promptly.
func (s *Session) waitExited() {
	select {
	case <-s.exited:
	case <-time.After(sessExitWait):
		s.killTree()
		<-s.exited
	}
}
