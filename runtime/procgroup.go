package runtime

import (
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
)

// procGroup signals the process group (and, for a PTY, the session) led by one
// leader; with containment a SIGKILL also goes to every process of the tree's cgroup.
// The leader's pid names its group only while it is unreaped, so every signal is sent
// under mu and only before reap: a recycled pid can never be hit.
//
// procGroup is safe for concurrent use.
type procGroup struct {
	mu      sync.Mutex
	l       leader // nil until the leader started
	session bool   // the leader is a session leader (PTY): reach other groups of the session
	reaped  bool
	pending syscall.Signal // a signal sent before the leader started; sent by setLeader
	cg      *treeCgroup    // the tree's own cgroup; nil without containment
}

// setLeader records the leader once it started, and sends a signal that arrived
// before (a Close or timeout racing the start).
func (g *procGroup) setLeader(l leader) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.l = l
	if g.pending != 0 {
		g.signalLocked(g.pending)
	}
}

// setpgid puts cmd's process in a new process group of its own, keeping the driver's
// other attributes.
func setpgid(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signal sends sig to the whole tree: the group and, for a session leader, the rest of
// its session. It returns ErrExited once the leader was reaped.
func (g *procGroup) signal(sig syscall.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return ErrExited
	}
	g.signalLocked(sig)
	return nil
}

// killFor sends SIGKILL to the tree, like signal, and records why in *reason under the
// group's lock, so a waiter that calls finish after the leader exits always sees the
// reason of a kill that reached the tree (a store after the signal could land too late).
func (g *procGroup) killFor(reason *atomic.Bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return
	}
	reason.Store(true)
	g.signalLocked(syscall.SIGKILL)
}

// signalGroups sends sig to the leader's group and to group fg (if it is another
// group, such as a terminal's foreground job), but not to the rest of the session.
func (g *procGroup) signalGroups(sig syscall.Signal, fg int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return ErrExited
	}
	if g.l != nil {
		g.l.signalTree(sig, false)
		// fg comes from the terminal (TIOCGPGRP), in our pid namespace.
		if fg > 0 && fg != g.l.hostPID() {
			_ = syscall.Kill(-fg, sig)
		}
	}
	return nil
}

func (g *procGroup) signalLocked(sig syscall.Signal) {
	if g.l == nil {
		g.pending = sig // not started yet
		return
	}
	g.l.signalTree(sig, g.session)
	if sig == syscall.SIGKILL {
		g.cg.kill() // and what left the group or session (setsid), at once
	}
}

// finish kills whatever is left of the tree with SIGKILL and marks the group reaped.
// The caller must call it after the leader exited and before it is reaped.
func (g *procGroup) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		g.signalLocked(syscall.SIGKILL)
		g.reaped = true
	}
}
