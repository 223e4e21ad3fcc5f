package nsinit

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// siginfoPID returns si_pid of a SIGCHLD siginfo (as waitid fills it), which x/sys
// keeps in an unnamed union. On 64-bit Linux the union starts at byte 16, after
// si_signo, si_errno, si_code and padding; si_pid is its first field. The package
// builds its seccomp filter only for amd64 and arm64, both 64-bit.
func siginfoPID(info *unix.Siginfo) int {
	b := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
	return int(*(*int32)(unsafe.Pointer(&b[16])))
}
