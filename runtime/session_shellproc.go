package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// start launches the shell and the goroutines that watch it.
func (s *Session) start(shell, cwd string, env []string) error {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return err
	}
	tree, err := s.cg.newTree()
	var l leader
	if err == nil {
		sp := &spawn{argv: []string{shell, "--noprofile", "--norc"}, dir: cwd, env: env,
			stdin: stdinR, extra: []*os.File{ctlW}, tree: tree} // the control pipe is fd 3
		l, err = s.sb.h.start(context.Background(), sp)
	}
	stdinR.Close()
	ctlW.Close()
	if err != nil {
		tree.remove()
		stdinW.Close()
		ctlR.Close()
		return err
	}
	s.tree = tree
	s.l, s.pid, s.stdin, s.ctl = l, l.pid(), stdinW, ctlR
	s.wg.Add(2)
	go s.waitShell()
	go s.readControl()
	return nil
}

// handshake sends the helpers and waits for the first frame.
func (s *Session) handshake(ctx context.Context) error {
	nonce := sessRandHex(16)
	if _, err := s.stdin.Write(sessInitLines(s.sb.guestPath(s.tmp), nonce)); err != nil {
		return fmt.Errorf("failed to write to the shell: %w", err)
	}
	t := time.NewTimer(sessStartTimeout)
	defer t.Stop()
	for {
		select {
		case b, ok := <-s.ctlCh:
			if !ok {
				return errors.New("shell exited during start")
			}
			fr, done, err := s.framer.take(b, nonce)
			if err != nil {
				return err
			}
			if done {
				if fr.envErr != nil {
					// The sandbox's env and the session's, together, are past the
					// bounds: a snapshot could not be kept, so there is no session.
					return fmt.Errorf("its starting environment: %w", fr.envErr)
				}
				s.snap = SessionSnapshot{Cwd: fr.Cwd, Env: fr.Env}
				return nil
			}
		case <-t.C:
			return errors.New("shell did not start in time")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitShell reaps the shell. Before reaping it kills whatever is left in the shell's
// process group, while the zombie still pins the group id against reuse, and in its
// cgroup; after, it removes the cgroup.
func (s *Session) waitShell() {
	defer s.wg.Done()
	s.l.awaitExit()
	s.reapMu.Lock()
	s.l.signalTree(syscall.SIGKILL, false)
	s.tree.kill() // what left the group (setsid) too
	st := s.l.reap()
	s.state = &st
	s.reaped = true
	s.reapMu.Unlock()
	s.tree.remove()
	close(s.exited)
}

// killTree kills the shell, its process group and every descendant, unless the shell
// was already reaped (then waitShell has killed its group).
func (s *Session) killTree() {
	s.reapMu.Lock()
	defer s.reapMu.Unlock()
	if s.reaped {
		return
	}
	s.tree.kill()
	if _, local := s.l.(*localLeader); local {
		sessKillTree(s.pid) // without a tree cgroup, the descendants that left the group
	} else {
		s.l.signalTree(syscall.SIGKILL, false) // the tree cgroup, which the driver requires, has the rest
	}
}

// readControl moves control-fd bytes to ctlCh until EOF or Close.
func (s *Session) readControl() {
	defer s.wg.Done()
	defer close(s.ctlCh)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.ctl.Read(buf)
		if n > 0 {
			select {
			case s.ctlCh <- slices.Clone(buf[:n]):
			case <-s.closing:
				return
			}
		}
		if err != nil {
			return
		}
	}
}
