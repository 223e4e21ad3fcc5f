package runtime

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the child pid has exited, without reaping it (WNOWAIT), so its
// pid and process group id stay reserved until the caller reaps it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// awaitExited waits, like waitExited, until the child pid has exited without reaping
// it, but on the child's pidfd through Go's netpoller: a process that runs for hours
// costs no thread meanwhile (a thread blocked in waitid(2) costs tens of KiB of
// memory). On a kernel without pidfds it is waitExited.
func awaitExited(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitExited(pid)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	sc, err := f.SyscallConn()
	if err != nil {
		return waitExited(pid)
	}
	// Look before each wait: the pidfd may have become readable before the poller
	// watched it.
	var werr error
	err = sc.Read(func(uintptr) bool {
		var done bool
		done, werr = exited(pid)
		return done
	})
	if err != nil {
		return err
	}
	return werr
}

// exited reports whether the child pid has exited, without reaping it. An error (the
// child is gone, never expected) ends the wait too, so no caller waits forever.
func exited(pid int) (bool, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return true, err
		}
		return info.Signo != 0, nil
	}
}

// killSession sends sig to every process of session sid that is not in process group
// sid (those are reached by kill(-sid)): jobs an interactive shell put in groups of
// their own.
func killSession(sid int, sig syscall.Signal) {
	for _, p := range listProcs() {
		if p.session == sid && p.pid != sid {
			_ = unix.Kill(p.pid, sig)
		}
	}
}

// KillAll sends SIGKILL to every process tree this process started and has not reaped
// (each child leads a process group, and a PTY's child a session), and to every process
// in the cgroups of its live sandboxes: for a forced exit,
// which has no time to end them gracefully but must not leave them running.
func KillAll() {
	killAllCgroups() // every process of every live sandbox, setsid or not
	self := os.Getpid()
	procs := listProcs()
	for _, c := range procs {
		if c.ppid != self {
			continue
		}
		if c.pgrp == c.pid {
			_ = unix.Kill(-c.pid, unix.SIGKILL)
		}
		_ = unix.Kill(c.pid, unix.SIGKILL)
		if c.session != c.pid {
			continue
		}
		for _, p := range procs {
			if p.session == c.pid {
				_ = unix.Kill(p.pid, unix.SIGKILL)
			}
		}
	}
}

// procInfo is what /proc/<pid>/stat says of a process's place in the process tree.
type procInfo struct{ pid, ppid, pgrp, session int }

// listProcs reads every process's parent, group and session from /proc. Processes
// that exit while it reads are left out.
func listProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold anything.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 {
			continue
		}
		p := procInfo{pid: pid}
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		p.session, _ = strconv.Atoi(f[3])
		out = append(out, p)
	}
	return out
}
