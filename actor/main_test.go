package actor

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
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
	// A temporary directory of this binary's own, so that no mount (a workspace image,
	// a test's tmpfs) left below it goes unnoticed; loop devices clear with their mount.
	tmp, err := os.MkdirTemp("", "actor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	leakcheck.Also(func() string {
		left, err := diskimg.MountsUnder(tmp)
		if err != nil {
			return err.Error()
		}
		if len(left) > 0 {
			return "mounts left behind: " + strings.Join(left, ", ")
		}
		// A loop device lets its file go just after the unmount: leakcheck asks again.
		if loops, err := diskimg.LoopsUnder(tmp); err != nil || len(loops) > 0 {
			return fmt.Sprintf("loop devices left bound to test files: %v %v", loops, err)
		}
		_ = os.Remove(tmp)
		return ""
	})
	leakcheck.Main(m)
}
