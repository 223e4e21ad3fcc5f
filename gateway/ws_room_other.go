//go:build !linux

package gateway

import "net"

// sendRoom reports false: only Linux tells how full a socket's send buffer is, so
// elsewhere every frame goes through a pump goroutine.
func sendRoom(net.Conn, int) bool { return false }
