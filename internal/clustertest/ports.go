package clustertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreeAddr returns a loopback address, 127.0.0.1:port, for a server started as a
// process to listen on, and keeps the port reserved until tb ends: a node that is
// killed and restarted gets its address back.
//
// A port the kernel picks (listen on port 0, then close) is a poor choice for that:
// until the server binds it, and again while a node is down, any outgoing connection
// of the machine may get the same port from the kernel's ephemeral range, and the
// server then fails with "address already in use". FreeAddr picks below that range,
// where the kernel never assigns a port by itself, and reserves the port with a lock
// file that every test process of the user honours (a lock held by a test that died
// is released by the kernel).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	hi := ephemeralLow()
	// One directory per user: another user's directory may not be writable.
	dir := filepath.Join(os.TempDir(), "sandgate-test-ports-"+strconv.Itoa(os.Getuid()))
	addr, release, err := reservePort(dir, max(1024, hi-reservedPorts), hi)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
	return addr
}

// reservedPorts is how many ports below the ephemeral range FreeAddr picks from.
const reservedPorts = 8192

// reservePort finds a port in [lo, hi) whose lock file in dir no one holds and
// that binds now, starting at a random one. release gives it back.
func reservePort(dir string, lo, hi int) (addr string, release func(), err error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", nil, fmt.Errorf("clustertest: port locks: %w", err)
	}
	n := hi - lo
	start := rand.IntN(n)
	for i := range n {
		port := lo + (start+i)%n
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return "", nil, fmt.Errorf("clustertest: port lock: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another test holds it
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			f.Close() // something outside the tests uses it
			continue
		}
		ln.Close()
		return addr, func() { f.Close() }, nil
	}
	return "", nil, fmt.Errorf("clustertest: no free port in [%d, %d)", lo, hi)
}

// ephemeralLow returns the first port of the kernel's ephemeral range (Linux's
// default where it cannot be read; other systems start theirs higher).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 1024+1024 {
				return lo
			}
		}
	}
	return 32768
}
