package runtime

import (
	"os"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestMain runs a sandbox init when re-executed as one, and otherwise checks, once
// every test of the package ran, that no goroutine, fd or child
// process (orphaned grandchildren included) was left behind.
func TestMain(m *testing.M) {
	MaybeRunInit() // TestMaybeRunInit re-executes this binary as a sandbox init
	if os.Getenv(crashEnv) != "" {
		crashHelper() // a child of TestSweepAfterKill9; never returns
	}
	// The Go netpoller's epoll and eventfd descriptors are made on first use and live
	// for the life of the process; make them before leakcheck's baseline.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.SetReadDeadline(time.Time{})
		_ = r.Close()
		_ = w.Close()
	}
	leakcheck.Main(m)
}
