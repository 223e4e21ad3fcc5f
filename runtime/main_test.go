package runtime

import (
	"os"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestMain (a re-executed sandbox init never gets here: the nsinit package runs it
// from its init function) checks, once
// every test of the package ran, that no goroutine, fd or child
// process (orphaned grandchildren included) was left behind.
func TestMain(m *testing.M) {
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
