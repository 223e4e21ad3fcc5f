package clustertest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrReserves checks that FreeAddr hands out bindable loopback ports below
// the kernel's ephemeral range, and never one it still holds.
func TestFreeAddrReserves(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 64 {
		addr := FreeAddr(t)
		if seen[addr] {
			t.Fatalf("FreeAddr handed out %s twice while holding it", addr)
		}
		seen[addr] = true
		host, p, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("FreeAddr = %q, want 127.0.0.1:port", addr)
		}
		if port, _ := strconv.Atoi(p); port < 1024 || port >= ephemeralLow() {
			t.Fatalf("port %d is outside [1024, %d)", port, ephemeralLow())
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("reserved %s does not bind: %v", addr, err)
		}
		ln.Close()
	}
}

// TestReservePortSkipsBusyAndHeld checks reservePort's two refusals on a one-port
// range: a port some other socket listens on, and a port another reservation holds
// until it is released. The port is one FreeAddr reserved, so that nothing else takes
// it while the test's own listener is closed; the test's lock files are its own.
func TestReservePortSkipsBusyAndHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	busy := ln.Addr().(*net.TCPAddr).Port
	if addr, _, err := reservePort(dir, busy, busy+1); err == nil {
		t.Fatalf("reservePort handed out %s, on which a socket listens", addr)
	}
	ln.Close()
	addr, release, err := reservePort(dir, busy, busy+1)
	if err != nil {
		t.Fatalf("port %d, no longer listened on, was refused: %v", busy, err)
	}
	if again, _, err := reservePort(dir, busy, busy+1); err == nil {
		t.Fatalf("reservePort handed out %s while %s held it", again, addr)
	}
	release()
	_, release, err = reservePort(dir, busy, busy+1)
	if err != nil {
		t.Fatalf("port %d was refused after its release: %v", busy, err)
	}
	release()
}
