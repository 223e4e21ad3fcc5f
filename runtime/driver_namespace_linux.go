package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runtime/internal/nsinit"
)

// open starts the sandbox's init, in a cgroup2 group of its own below the sandbox's
// (so that each tree's group, which the init puts the tree's leader in, is a sibling)
// and in the sandbox's v1 groups, which every process it spawns inherits.
func (d NamespaceDriver) open(ctx context.Context, s *Sandbox) (host, error) {
	if s.cg == nil || s.cg.v2 == "" {
		return nil, fmt.Errorf("%w: the namespace driver needs a cgroup2 hierarchy to contain process trees", ErrNoCgroups)
	}
	if d.UserNS {
		// So the init, root of its user namespace, may clone into the trees' groups.
		ids := nsinit.DefaultIDRange
		if err := s.cg.delegate(int(ids.HostUID), int(ids.HostGID)); err != nil {
			return nil, err
		}
	}
	home, err := s.cg.newTree()
	if err != nil {
		return nil, err
	}
	network := d.Network
	if s.cfg.Network != "" {
		network = s.cfg.Network
	}
	cfg := nsinit.Config{
		ID: s.cfg.ID, Workspace: s.dir, Rootfs: d.Rootfs, Network: nsinit.Network(network),
		UID: d.UID, GID: d.GID, Cgroup: home.dir, Enter: s.cg.enter,
	}
	h := &nsHost{s: s, home: home, uid: -1, gid: -1, lease: d.Lease}
	if d.UserNS {
		ids := nsinit.DefaultIDRange
		cfg.UserNS = &ids
		h.uid, h.gid = int(ids.HostUID)+d.UID, int(ids.HostGID)+d.GID
	}
	if d.Lease != nil {
		// Every tree from now on goes below the freeze group; the init's stays out.
		if cfg.Freeze, err = s.cg.nestTrees(); err != nil {
			home.remove()
			return nil, err
		}
		cfg.Lease, cfg.LeaseUntil = true, d.Lease.deadline()
	}
	if h.in, err = nsinit.Start(ctx, cfg); err != nil {
		home.remove()
		return nil, err
	}
	if d.Lease != nil {
		d.Lease.attach(h.in)
	}
	h.rootDir = "/proc/" + strconv.Itoa(h.in.PID()) + "/root"
	return h, nil
}

// nsHost asks a sandbox's init to start its processes.
type nsHost struct {
	s       *Sandbox
	in      *nsinit.Init
	home    *treeCgroup // the init's own group
	rootDir string
	uid     int // the host ids of the processes' user with a user namespace; else -1
	gid     int
	lease   *Lease // NamespaceDriver.Lease, which the init holds; or nil
}

func (h *nsHost) root() string          { return h.rootDir }
func (h *nsHost) owner() (uid, gid int) { return h.uid, h.gid }

func (h *nsHost) close() error {
	if h.lease != nil {
		h.lease.detach(h.in)
	}
	err := h.in.Close()
	h.home.remove()
	return err
}

// start asks the init for the process, in the tree's group, with the tree's stdio or a
// new PTY whose slave goes to the init.
func (h *nsHost) start(ctx context.Context, sp *spawn) (leader, error) {
	procs, err := sp.tree.procsFile() // the tree's: not closed here
	if err != nil {
		return nil, err
	}
	dir, err := sp.tree.dirFile() // the tree's too
	if err != nil {
		return nil, err
	}
	req := nsinit.SpawnRequest{
		Argv: sp.argv, Env: sp.env, Dir: h.s.guestPath(sp.dir),
		Stdin: sp.stdin, Stdout: sp.stdout, Stderr: sp.stderr, Extra: sp.extra, Cgroup: procs, CgroupDir: dir,
	}
	// The init writes the status to this pipe when the process exits: the leader's
	// exit fd, and reap's answer, without waiting for the exit frame.
	// Only the read end is non-blocking: the write end, blocking, stays off Go's poller
	// (which a non-blocking file joins, to leave again at once for Spawn's Fd).
	var status [2]int
	if err := unix.Pipe2(status[:], unix.O_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	// F_SETFL at once: a new pipe's read end has no other flag it could clear, and
	// SetNonblock would read them first.
	if _, err := unix.FcntlInt(uintptr(status[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		_, _ = unix.Close(status[0]), unix.Close(status[1])
		return nil, os.NewSyscallError("fcntl", err)
	}
	statusW := os.NewFile(uintptr(status[1]), "|status")
	defer statusW.Close() // the init has its own copy once Spawn returns
	req.Status, req.NoWait = statusW, sp.oneShot
	var master *os.File
	if sp.pty != nil {
		m, slave, err := pty.Open()
		if err != nil {
			_ = unix.Close(status[0])
			return nil, err
		}
		defer slave.Close() // the init has its own copy once Spawn returns
		ws := &unix.Winsize{Col: sp.pty.Cols, Row: sp.pty.Rows}
		if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, ws); err != nil {
			_ = m.Close()
			_ = unix.Close(status[0])
			return nil, err
		}
		if master, err = pollable(m); err != nil {
			_ = unix.Close(status[0])
			return nil, err
		}
		req.TTY = slave
	}
	ch, err := h.in.Spawn(ctx, req)
	if err != nil {
		_ = unix.Close(status[0])
		if master != nil {
			_ = master.Close()
		}
		if errors.Is(err, nsinit.ErrLeaseExpired) {
			return nil, ErrLeaseExpired // the sandbox is fenced: nothing may start
		}
		return nil, err
	}
	sp.master = master
	return &nsLeader{ch: ch, status: status[0]}, nil
}

// nsLeader is a process spawned by the init, which reaps it: when it exits, the init
// writes how it ended to the status pipe and reports it, then kills what is left of
// its group and session and reaps it.
type nsLeader struct {
	ch     *nsinit.Child
	status int   // the status pipe's read end (non-blocking); closed by reap
	notRun error // a oneShot start that failed, set by reap
	// reported is set once the exec's poll saw the status pipe readable
	// (exitReported): the status is there, and the pipe need not be asked again.
	reported atomic.Bool
}

var _ exitNoter = (*nsLeader)(nil)

// exitReported records that the status pipe was seen readable.
func (l *nsLeader) exitReported() { l.reported.Store(true) }

// signalTimeout bounds a signal request to the init, which answers at once unless it
// is gone (and then so is the process).
const signalTimeout = 5 * time.Second

func (l *nsLeader) pid() int     { return l.ch.PID() }
func (l *nsLeader) hostPID() int { return l.ch.HostPID() }
func (l *nsLeader) awaitExit()   { <-l.ch.Done() }

// signalTree asks the init to signal the group, and the session of a session leader.
// A SIGKILL after the leader exited (procGroup.finish, on every exit) is left to the
// init, which kills what is left of the group and session as it reaps the leader: no
// round trip to the init on the way out of every exec.
func (l *nsLeader) signalTree(sig syscall.Signal, _ bool) {
	if sig == syscall.SIGKILL && (l.reported.Load() || l.statusReady() || l.ch.Exited()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	_ = l.ch.Signal(ctx, sig) // ErrExited: the init has already ended the tree
}

// statusReady reports whether the status pipe is readable: the init wrote the status
// (the leader exited), or closed it without one (its start failed, or the init is
// gone). A oneShot leader has no pidfd for Child.Exited to poll.
func (l *nsLeader) statusReady() bool {
	if l.status < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(l.status), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents != 0
}

func (l *nsLeader) startErr() error { return l.notRun }

// exitFD is the status pipe's read end itself, which reap reads and closes: readable
// once the init saw the exit and wrote the status (or, hung up, once the init is
// gone). Lent, not copied: a copy was a dup and a close more on every exec.
func (l *nsLeader) exitFD() (int, bool, error) { return l.status, false, nil }

// reap returns the status the init wrote to the pipe, or else (the pipe polled
// before the exit, or the init gone) the one it reported. A process whose init went
// away first died with the sandbox's pid namespace: it is reported killed. The pipe's
// status is handed to the Child: for an exec (NoWait) it is the init's only report.
func (l *nsLeader) reap() waitStatus {
	st, ok, err := nsinit.ReadStatus(l.status)
	_ = unix.Close(l.status)
	l.status = -1
	if ok && err == nil {
		l.ch.Finish(st)
	} else {
		st, err = l.ch.Wait(context.Background())
	}
	if errors.Is(err, nsinit.ErrNotStarted) {
		l.notRun = err
		if errors.Is(err, nsinit.ErrLeaseExpired) {
			l.notRun = ErrLeaseExpired // the sandbox is fenced: nothing may start
		}
	}
	switch {
	case err != nil:
		return waitStatus{code: -1, sig: syscall.SIGKILL, ok: true}
	case st.Signal != 0:
		return waitStatus{code: -1, sig: st.Signal, ok: true}
	}
	return waitStatus{code: st.Code, ok: true}
}
