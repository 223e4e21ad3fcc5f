package gateway

import (
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// connProgress returns a function that reports whether conn's peer took bytes since
// it was last called: its TCP stack acknowledged more of what was sent (tcpi_bytes_acked),
// which it does only while the peer's application reads once its receive buffer is
// full. It returns nil for a connection that is not TCP. One getsockopt(2) a call.
func connProgress(conn net.Conn) func() bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	acked := func() (n uint64, ok bool) {
		_ = raw.Control(func(fd uintptr) {
			info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
			if err == nil {
				n, ok = info.Bytes_acked, true
			}
		})
		return n, ok
	}
	last, ok := acked()
	if !ok {
		return nil
	}
	var mu sync.Mutex
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		n, ok := acked()
		if !ok || n == last {
			return false
		}
		last = n
		return true
	}
}
