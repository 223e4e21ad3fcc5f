package runtime

import (
	"context"
	"os"
	"syscall"
)

// Driver decides where a sandbox's processes run: on the host, as the server's user
// (LocalDriver), or inside the sandbox's own namespaces, spawned by a small init per
// sandbox (NamespaceDriver). New opens the driver for each sandbox and Close closes
// it; exec, processes, terminals and session shells all start through it, and the
// runtime wraps every driver in the same lifecycle: output rings, timeouts, process
// trees killed with their leader, limits and cgroups.
//
// The set of drivers is closed (the interface has unexported methods): a driver owns
// how a process is started, waited for and signalled, which only the runtime can
// pair with its own bookkeeping.
type Driver interface {
	// Name is the driver's name as the server reports it: "local" or "namespace".
	Name() string
	// guestDir returns the workspace directory hostDir as the processes see it.
	guestDir(hostDir string) string
	// open prepares sandbox s, whose config, workspace and cgroups are set.
	open(ctx context.Context, s *Sandbox) (host, error)
}

// GuestDir returns where processes of driver d see the workspace directory hostDir (a
// nil d is the default, LocalDriver).
func GuestDir(d Driver, hostDir string) string {
	if d == nil {
		return hostDir
	}
	return d.guestDir(hostDir)
}

// host starts the processes of one sandbox.
type host interface {
	// start starts the leader of a new process tree, as sp says.
	start(ctx context.Context, sp *spawn) (leader, error)
	// root is where the sandbox's own file system is seen from the server: "" when
	// the processes see the host's, else a directory such that root+p is the
	// server's path of the sandbox's absolute path p.
	root() string
	// owner is the host uid and gid that files the server makes for the sandbox's
	// processes (a session's command files) must belong to, or -1, -1 to keep ours.
	owner() (uid, gid int)
	// close ends whatever the host holds (the namespace driver's init, and with it
	// every process still inside). Sandbox.Close calls it once, after the trees.
	close() error
}

// spawn describes the leader of a process tree for a host to start.
type spawn struct {
	// argv is the program and its arguments; argv[0] without a slash is looked up in
	// the PATH of env, as the processes see the file system.
	argv []string
	// dir is the working directory: an absolute path of the server's, inside the
	// workspace.
	dir string
	// env is the complete environment, KEY=value.
	env []string
	// stdin, stdout and stderr are the leader's fds 0, 1 and 2; nil is /dev/null.
	// Unused with pty.
	stdin, stdout, stderr *os.File
	// extra are the leader's fds 3, 4, ...
	extra []*os.File
	// pty, if set, puts the leader on a new PTY of that size, as a session leader
	// with it as the controlling terminal; start sets master. Without pty the
	// leader leads a new process group.
	pty *WinSize
	// oneShot says the caller is an exec, which needs no pid and learns of a failed
	// start from the leader (startErr) once it has ended: start may return before the
	// process is known to have started.
	oneShot bool
	// tree is the tree's cgroup, which the leader starts in; nil without cgroups.
	tree *treeCgroup
	// master is the PTY's master, set by start: non-blocking and on Go's poller.
	master *os.File
}

// leader is the first process of a tree, as its driver started it.
type leader interface {
	// pid is the pid the API shows: the host's for the local driver, the one inside
	// the sandbox for the namespace driver.
	pid() int
	// hostPID is the leader's pid as the server sees it (0 if unknown): what a
	// terminal reports as its foreground group when the leader is in front.
	hostPID() int
	// exitFD returns an fd that becomes readable once the leader has exited. With
	// owned the caller closes it; else it is the leader's own, valid until reap
	// (which closes it), and the caller stops using it before reap.
	exitFD() (fd int, owned bool, err error)
	// awaitExit blocks until the leader has exited. The leader's pid still names its
	// process group and session until reap.
	awaitExit()
	// signalTree sends sig to the leader's process group and, with session, to the
	// rest of its session. The caller (procGroup) calls it only before reap.
	signalTree(sig syscall.Signal, session bool)
	// reap releases the exited leader and returns how it ended. The caller has
	// killed what was left of its tree first.
	reap() waitStatus
	// startErr, after reap, says why a oneShot leader never started, or nil.
	startErr() error
}

// exitNoter is a leader that makes use of knowing that its exit fd reported: collect
// tells it so before it calls exited. The namespace leader then skips asking the pipe
// again before the kill of what is left (which the init does as it reaps).
type exitNoter interface{ exitReported() }

// waitStatus is how a leader ended.
type waitStatus struct {
	code int            // the exit code, or -1 when killed by a signal or unknown
	sig  syscall.Signal // the signal that killed it, or 0
	ok   bool           // false if the status could not be known
}

// shellCode is the status as a shell reports it: the code, or 128+n for signal n.
func (w waitStatus) shellCode() int {
	if w.sig != 0 {
		return 128 + int(w.sig)
	}
	return w.code
}

// exitStatus is the status as the API reports it.
func (w waitStatus) exitStatus() ExitStatus {
	switch {
	case !w.ok:
		return ExitStatus{Code: -1}
	case w.sig != 0:
		return ExitStatus{Code: -1, Signal: SignalName(w.sig)}
	}
	return ExitStatus{Code: w.code}
}
