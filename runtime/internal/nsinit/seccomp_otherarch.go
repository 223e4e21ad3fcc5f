//go:build linux && !amd64 && !arm64

package nsinit

// auditArch is zero where no syscall table was written: the init refuses to start
// rather than run sandboxes without a filter.
const auditArch = 0

const x32Bit = 0

var commonDenied, archDenied []uint32
