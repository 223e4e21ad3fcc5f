//go:build !linux

package gateway

import "net"

// connProgress cannot tell a peer's progress off Linux: it returns nil, and a live
// stream counts as reading only while it takes from the ring.
func connProgress(net.Conn) func() bool { return nil }

// paceToClient does nothing off Linux (see the Linux one).
func paceToClient(net.Conn) {}
