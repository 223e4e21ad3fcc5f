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

// TestMain runs the init when the test binary is re-executed as one (as
// runtime.MaybeRunInit does in sandgate), a helper when asked, and otherwise the tests
// under leakcheck.
func TestMain(m *testing.M) {
	if IsInit() {
		Main()
	}
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
