package nsinit

import (
	"os"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// helperEnv makes the test binary run a helper (see helpers_linux_test.go) instead of
// the tests.
const helperEnv = "NSINIT_TEST_HELPER"

// TestMain runs a helper when asked, and otherwise the tests under leakcheck (a
// re-executed init never gets here: the package's init function runs it).
func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	// The netpoller's descriptors are made on first use and live as long as the
	// process; make them before leakcheck's baseline.
	if r, w, err := os.Pipe(); err == nil {
		_ = r.SetReadDeadline(time.Time{})
		_ = r.Close()
		_ = w.Close()
	}
	leakcheck.Main(m)
}
