package gateway

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Indices into the array getsockopt(SO_MEMINFO) fills (linux/sock_diag.h).
const (
	skMeminfoSndbuf     = 3
	skMeminfoWmemQueued = 5
	skMeminfoVars       = 9
)

// sendRoom reports whether conn's socket takes n more bytes without making the writer
// wait: its queued send memory, which counts the kernel's overhead per buffer, plus
// twice n for that overhead, stays under its send buffer. One getsockopt(2); false
// whenever it cannot tell.
func sendRoom(conn net.Conn, n int) bool {
	raw, ok := sockOf(conn)
	if !ok {
		return false
	}
	room := false
	_ = raw.Control(func(fd uintptr) {
		var info [skMeminfoVars]uint32
		size := uint32(unsafe.Sizeof(info))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 || size < uint32(unsafe.Sizeof(info)) {
			return
		}
		room = int64(info[skMeminfoWmemQueued])+2*int64(n)+4096 < int64(info[skMeminfoSndbuf])
	})
	return room
}

// sockOf returns conn's socket for getsockopt and setsockopt, when it has one.
func sockOf(conn net.Conn) (syscall.RawConn, bool) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	return raw, err == nil
}
