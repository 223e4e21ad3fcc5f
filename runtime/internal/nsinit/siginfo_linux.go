package nsinit

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// siginfoPID returns si_pid of a SIGCHLD siginfo (as waitid fills it), which x/sys
// keeps in an unnamed union. On 64-bit Linux the union starts at byte 16, after
// si_signo, si_errno, si_code and padding; si_pid is its first field. The package
// builds its seccomp filter only for amd64 and arm64, both 64-bit.
func siginfoPID(info *unix.Siginfo) int { return int(siginfoInt32(info, 16)) }

// siginfoStatus returns how the child of a SIGCHLD siginfo ended, as an exit frame
// says it: its exit code and signal 0, or code -1 and the signal that killed it. si_code
// is at byte 8 and si_status follows si_pid and si_uid in the union, at byte 24.
func siginfoStatus(info *unix.Siginfo) (code, sig int) {
	status := int(siginfoInt32(info, 24))
	if siginfoInt32(info, 8) == cldExited {
		return status, 0
	}
	return -1, status // CLD_KILLED or CLD_DUMPED: waitid asked for exits only
}

// cldExited is CLD_EXITED (linux/signal.h), which x/sys does not name.
const cldExited = 1

func siginfoInt32(info *unix.Siginfo, off int) int32 {
	b := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
	return *(*int32)(unsafe.Pointer(&b[off]))
}
