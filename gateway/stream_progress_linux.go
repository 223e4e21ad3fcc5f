package gateway

import (
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// connProgress returns a function that reports whether conn's peer took bytes since
// it was last called: its TCP stack acknowledged more of what was sent (tcpi_bytes_acked),
// which it does only while the peer's application reads once its receive buffer is
// full. It returns nil for a connection that is not TCP. One getsockopt(2) a call.
func connProgress(conn net.Conn) func() bool {
	raw, ok := sockOf(conn)
	if !ok {
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

// streamLowat is the unsent data a forwarding node lets queue for a stream's client
// (TCP_NOTSENT_LOWAT), see paceToClient.
const streamLowat = 128 << 10

// paceToClient makes writes to conn wait once streamLowat bytes are queued unsent,
// instead of once the socket's send buffer (megabytes, autotuned) is full. A node
// forwarding a stream then reads the owner's stream at the pace the client reads it,
// a piece at a time, so the owner sees its connection to this node acknowledge bytes
// while the client reads, however slowly (connProgress), rather than nothing while
// this node's one write waits for a third of a large buffer to drain. It does not
// bound what is in flight, so throughput over a long path is unchanged.
func paceToClient(conn net.Conn) {
	raw, ok := sockOf(conn)
	if !ok {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, streamLowat)
	})
}
