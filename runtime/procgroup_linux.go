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

// killSession sends sig to every process of session sid that is not in process group
// sid (those are reached by kill(-sid)): jobs an interactive shell put in groups of
// their own.
func killSession(sid int, sig syscall.Signal) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == sid {
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
		if sess, _ := strconv.Atoi(f[3]); sess == sid {
			_ = unix.Kill(pid, sig)
		}
	}
}

// outputPipe returns a pipe for one output stream of a child. The read end is
// non-blocking and served by the runtime poller; the write end, which only the child
// uses, stays blocking and never touches the poller (os.Pipe would register it, and
// exec.Cmd would then make it blocking again, for nothing: four syscalls per pipe).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
