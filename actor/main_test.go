package actor

import (
	"os"
	"testing"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

func TestMain(m *testing.M) {
	// The Go runtime's netpoller opens its epoll and eventfd descriptors once, on first
	// use, and keeps them; start it before leakcheck takes its baseline so they are not
	// reported as leaks.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.Close()
		_ = w.Close()
	}
	leakcheck.Main(m)
}
