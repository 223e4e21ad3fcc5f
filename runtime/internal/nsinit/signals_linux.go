package nsinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction for rt_sigaction; only the handler
// is read or set here, and a zero flags, restorer and mask are right for SIG_DFL.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigIgn is SIG_IGN as the kernel spells it.
const sigIgn = 1

// defaultIgnoredSignals sets every signal the init inherited as ignored back to its
// default, so the sandbox's processes never inherit how the server was started (under
// nohup, or by a parent that ignores one of libc's internal signals): ignored signals
// survive fork and exec, and neither spawn path resets them. Go installed its own
// handler for the signals it manages, which the spawns reset anyway; what is still
// ignored here is only what Go left alone. It runs once, at the init's start.
func defaultIgnoredSignals() {
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 || old.handler != sigIgn {
			continue
		}
		var dfl kernelSigaction
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}

// uncatchChildSignal sets SIGCHLD back to its default disposition in the kernel,
// which Go's runtime had replaced with its own handler at start (it catches every
// signal, forwarding only those a program asked for). The init never asks for
// SIGCHLD: its reaper waits for exits in waitid, which the kernel wakes whatever the
// signal's disposition. Caught, every child's exit made the kernel deliver a signal
// to one of the init's threads, waking it from its syscall if it slept there, to run
// Go's handler, which drops it: at least one kernel entry and exit through a signal
// frame per spawn, for nothing. With the default disposition (ignore, but still
// leave a zombie to reap, unlike SIG_IGN) the kernel discards the signal as it is
// raised. Nothing of Go's sets it again: only os/signal's Notify, Ignore or Reset
// for SIGCHLD would, and the init calls none of them for it. The sandbox's processes
// start with default handlers on either spawn path, so they see no difference.
func uncatchChildSignal() error {
	var dfl kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
		return fmt.Errorf("failed to reset SIGCHLD: %w", e)
	}
	return nil
}
