package clustertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds the one build of the binary: the first build of a loaded
// machine compiles everything.
const buildTimeout = 10 * time.Minute

// built is the binary built by this test binary.
var built struct {
	mu   sync.Mutex
	dir  string
	path string
}

// Binary builds cmd/sandgate once per test binary and returns the path of the
// executable; a build failure fails tb. Safe for concurrent use.
func Binary(tb testing.TB) string {
	tb.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.path != "" {
		return built.path
	}
	dir, err := os.MkdirTemp("", "clustertest-bin-")
	if err != nil {
		tb.Fatalf("failed to make the binary's directory: %v", err)
	}
	path := filepath.Join(dir, "sandgate")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/sandgate/sandgate/cmd/sandgate").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		tb.Fatalf("failed to build sandgate: %v\n%s", err, out)
	}
	built.dir, built.path = dir, path
	return path
}

// Cleanup removes the binary Binary built, if any. Call it once the package's tests
// are done (from TestMain); a later Binary builds again.
func Cleanup() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	built.dir, built.path = "", ""
}
