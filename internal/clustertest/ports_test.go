package clustertest

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// TestFreeAddrReserves checks that FreeAddr hands out bindable loopback ports below
// the kernel's ephemeral range, and never one it still holds. A port some process
// outside the reservations took between FreeAddr's check and the test's bind is
// logged with its holder; more than two such is a failure.
func TestFreeAddrReserves(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	busy := 0 // taken by a process outside the tests' reservations between the check and here
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
		if errors.Is(err, syscall.EADDRINUSE) {
			// The reservation binds only processes that take the lock (the tests and
			// what they start): say who took it, for the log.
			out, _ := exec.Command("ss", "-Hltnp", "sport = :"+p).CombinedOutput()
			t.Logf("reserved %s was taken meanwhile by a process outside the reservations: %s", addr, out)
			busy++
			continue
		}
		if err != nil {
			t.Fatalf("reserved %s does not bind: %v", addr, err)
		}
		ln.Close()
	}
	if busy > 2 {
		t.Fatalf("%d of 64 reserved ports did not bind", busy)
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
