package diskimg

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestMain gives this test binary a temporary directory of its own, so that once every
// test ran it can check that none left a mount below it (loop devices clear themselves
// when their mount goes), besides leakcheck's goroutines, fds and processes.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "diskimg-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	leakcheck.Also(func() string {
		left, err := MountsUnder(tmp)
		if err != nil {
			return err.Error()
		}
		if len(left) > 0 {
			return "mounts left behind: " + strings.Join(left, ", ")
		}
		// A loop device lets its file go just after the unmount: leakcheck asks again.
		if loops, err := LoopsUnder(tmp); err != nil || len(loops) > 0 {
			return fmt.Sprintf("loop devices left bound to test files: %v %v", loops, err)
		}
		_ = os.Remove(tmp)
		return ""
	})
	leakcheck.Main(m)
}
