package runtime

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LocalDriver runs processes directly on the host, in the workspace directory, as the
// server's user: no isolation, for development and for machines without namespaces.
// It is the runtime's default Driver. Its zero value is ready to use.
type LocalDriver struct{}

var _ Driver = LocalDriver{}

// Name returns "local".
func (LocalDriver) Name() string { return "local" }

func (LocalDriver) guestDir(hostDir string) string { return hostDir }

func (LocalDriver) open(_ context.Context, s *Sandbox) (host, error) {
	return localHost{cg: s.cg}, nil
}

// localHost starts processes as children of the server.
type localHost struct{ cg *sandboxCgroup }

func (localHost) root() string          { return "" }
func (localHost) owner() (uid, gid int) { return -1, -1 }
func (localHost) close() error          { return nil }

// start looks argv[0] up, starts the command in the tree's cgroup (and the sandbox's
// v1 groups) and returns its leader.
func (h localHost) start(_ context.Context, sp *spawn) (leader, error) {
	path, err := lookPath(sp.argv[0], sp.env, sp.dir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: sp.argv, Dir: sp.dir, Env: sp.env, ExtraFiles: sp.extra}
	if sp.stdin != nil {
		cmd.Stdin = sp.stdin
	}
	if sp.stdout != nil {
		cmd.Stdout = sp.stdout
	}
	if sp.stderr != nil {
		cmd.Stderr = sp.stderr
	}
	sp.tree.attach(cmd)
	if sp.pty != nil {
		err = h.cg.startIn(sp.tree, cmd, func() (err error) {
			sp.master, err = startPTY(cmd, *sp.pty)
			return err
		})
		if err != nil && sp.master != nil {
			_ = sp.master.Close()
			sp.master = nil
		}
	} else {
		setpgid(cmd)
		err = h.cg.startIn(sp.tree, cmd, cmd.Start)
	}
	if err != nil {
		return nil, err
	}
	return &localLeader{cmd: cmd}, nil
}

// localLeader is a child of the server: it is waited for without being reaped
// (waitid WNOWAIT), so its pid keeps naming its group and session until reap.
type localLeader struct{ cmd *exec.Cmd }

func (l *localLeader) pid() int        { return l.cmd.Process.Pid }
func (l *localLeader) hostPID() int    { return l.cmd.Process.Pid }
func (l *localLeader) awaitExit()      { _ = awaitExited(l.pid()) } // on error (never expected) reap still waits
func (l *localLeader) startErr() error { return nil }               // start waited for the exec

func (l *localLeader) exitFD() (int, bool, error) {
	fd, err := exitNotifier(l.pid())
	return fd, true, err
}

func (l *localLeader) signalTree(sig syscall.Signal, session bool) {
	pid := l.pid()
	_ = syscall.Kill(-pid, sig) // ESRCH: the group is already empty
	if session {
		killSession(pid, sig)
	}
}

func (l *localLeader) reap() waitStatus {
	l.cmd.WaitDelay = drainBound // bounds the stdio copiers if an escaped child holds a pipe
	_ = l.cmd.Wait()
	ps := l.cmd.ProcessState
	if ps == nil {
		return waitStatus{code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return waitStatus{code: -1, sig: ws.Signal(), ok: true}
	}
	return waitStatus{code: ps.ExitCode(), ok: true}
}

// lookPath resolves name like a shell does, using the PATH in env. A name with a slash
// is used as is: the kernel reports what is wrong with it at start.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := d + "/" + name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// executable reports whether p is a file (not a directory) we may execute.
func executable(p string) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	return unix.Access(p, unix.X_OK) == nil
}
