//go:build linux

package nsinit

import "golang.org/x/sys/unix"

// auditArch is the architecture the seccomp filter accepts; any other ABI is killed.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is zero: arm64 has no second syscall numbering to refuse.
const x32Bit = 0

// archDenied are denied syscalls only this architecture has.
var archDenied = []uint32{unix.SYS_NFSSERVCTL}
