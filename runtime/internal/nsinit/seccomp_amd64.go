//go:build linux

package nsinit

import "golang.org/x/sys/unix"

// auditArch is the architecture the seccomp filter accepts; any other ABI is killed.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks x32 syscalls, which share AUDIT_ARCH_X86_64 but not its numbers: all
// refused.
const x32Bit = 0x40000000

// archDenied are denied syscalls only this architecture has.
var archDenied = []uint32{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS_CREATE_MODULE,
	unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE, unix.SYS__SYSCTL, unix.SYS_NFSSERVCTL,
}
