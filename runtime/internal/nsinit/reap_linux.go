package nsinit

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// reapLoop waits in waitid, on a thread of its own, until a child has exited, and
// reaps it (reap). Waiting in the kernel rather than for SIGCHLD through Go's signal
// handling sends the exit frame tens of microseconds sooner, which an exec waits for
// (its status). With no child at all waitid fails at once: the loop then waits for
// the next fork (forkKick). It runs for the life of the init (which ends with
// os.Exit).
//
// The waitid that wakes the loop also names the child (WNOWAIT leaves it a zombie, so
// its pid stays its own), and the next one returns at once while another child has
// exited: no second waitid to look again, under mu or after the last child.
func (ip *initProc) reapLoop() {
	var w reapWait
	var y schedYield
	for {
		y.maybe(time.Now())
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			ip.kick.wait()
		case err == nil:
			if pid := siginfoPID(&info); pid > 0 {
				ip.reap(pid, &info, &w)
			}
		}
	}
}

// reapWait is an unknown child that reap found while spawn seq was under way, and
// waited for that spawn to end (see reap).
type reapWait struct {
	pid int
	seq uint64
}

// reap collects the exited child pid, spawned or orphaned (re-parented to pid 1), as
// waitid described it in info, and reports a spawned one: its status goes out at once
// (to its status pipe, and in an exit frame unless it is quiet), and while it is a
// zombie its pid still names its process group and session, so whatever is left of
// them is killed before it is reaped, as a process tree ends with its leader.
//
// Only the decision is made under mu: whose child it is, and whether to leave it
// unreaped for now. A process forked but not yet announced must stay unreaped, or its
// pid could not be named in the started frame, and its exit frame must follow its
// started frame; the spawner registers a child, and sends that frame, under mu, so a
// child found in kids has both behind it. Once it is taken out of kids and ids, no
// one else names its pid (signal answers ErrExited), and the pid cannot be reused
// before the Wait4 below: the report, the kill and the reap run without mu, so a
// spawn is not held up behind them.
func (ip *initProc) reap(pid int, info *unix.Siginfo, w *reapWait) {
	ip.mu.Lock()
	k, spawned := ip.kids[pid]
	if !spawned && ip.spawning && (pid != w.pid || ip.spawnSeq == w.seq) {
		// Perhaps the child of the fork under way, not yet registered: look again once
		// that spawn has ended. Found again during a later spawn, it is an orphan (that
		// spawn's child did not exist yet, and the pid, unreaped, could not be reused),
		// so a stream of spawns never holds it up for long.
		w.pid, w.seq = pid, ip.spawnSeq
		for ip.spawning && ip.spawnSeq == w.seq {
			ip.spawned.Wait()
		}
		ip.mu.Unlock()
		return // the caller's waitid finds it again
	}
	if spawned {
		delete(ip.kids, pid)
		delete(ip.ids, k.id)
	}
	ip.mu.Unlock()
	var failed error
	if spawned && ip.own != nil {
		var forget pathKey
		if forget, failed = ip.own.async.reaped(pid); forget.name != "" {
			// Gone from the host's directory since it was cached: the next spawn
			// searches again.
			ip.paths.forgetKey(forget)
		}
	}
	switch {
	case spawned && failed != nil && !ip.ending.Load():
		// An async spawn whose child failed before its exec: answered as a spawn
		// that failed, then the status pipe closed without a status.
		_ = ip.c.send(errorFrame(k.id, failed), nil, nil)
	case spawned && !ip.ending.Load():
		fr := &frame{Op: opExit, ID: k.id}
		fr.Code, fr.Signal = siginfoStatus(info)
		wrote := false
		if k.status >= 0 {
			st := encodeStatus(fr.Code, fr.Signal)
			_, err := unix.Write(k.status, st[:]) // 8 bytes: never blocks
			wrote = err == nil
		}
		if !k.quiet || !wrote { // a quiet kid's pipe that failed: the frame is all it gets
			_ = ip.c.send(fr, nil, nil)
		}
		_ = signalTree(pid, k.session, unix.SIGKILL)
	}
	if spawned && k.status >= 0 {
		_ = unix.Close(k.status)
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil)
}
