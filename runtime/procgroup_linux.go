package runtime

import (
	"errors"
	"os"
	"syscall"

	"github.com/sandgate/sandgate/runtime/internal/procfs"
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
	for _, p := range procfs.List("/proc") {
		if p.Session == sid && p.PID != sid {
			_ = unix.Kill(p.PID, sig)
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
	procs := procfs.List("/proc")
	for _, c := range procs {
		if c.PPID != self {
			continue
		}
		if c.Pgrp == c.PID {
			_ = unix.Kill(-c.PID, unix.SIGKILL)
		}
		_ = unix.Kill(c.PID, unix.SIGKILL)
		if c.Session != c.PID {
			continue
		}
		for _, p := range procs {
			if p.Session == c.PID {
				_ = unix.Kill(p.PID, unix.SIGKILL)
			}
		}
	}
}
