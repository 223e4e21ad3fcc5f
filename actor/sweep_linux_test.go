package actor

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ownCgroup2 returns this process's cgroup2 directory, failing the test without one:
// CI machines have it.
func ownCgroup2(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			for _, mnt := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if _, err := os.Stat(filepath.Join(mnt, "cgroup.procs")); err == nil {
					if st, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil && !st.IsDir() {
						return filepath.Join(mnt, p)
					}
				}
			}
		}
	}
	tb.Fatal("this test needs a cgroup2 hierarchy")
	return ""
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOpenSweepsLeftovers: Open ends a process that a crashed run of the same node
// left in its sandbox's cgroup, removes the group and logs the sandbox.
func TestOpenSweepsLeftovers(t *testing.T) {
	t.Parallel()
	rnd := make([]byte, 4)
	_, _ = rand.Read(rnd)
	node := "test-sweep-" + hex.EncodeToString(rnd)
	scope := filepath.Join(ownCgroup2(t), "sandgate-"+node)
	group := filepath.Join(scope, "sb-left.00000000")
	if err := os.MkdirAll(group, 0o755); err != nil {
		t.Fatalf("the server's cgroup2 group is not writable: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(group); _ = syscall.Rmdir(scope) })
	fd, err := syscall.Open(group, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Setsid: true}
	err = cmd.Start()
	_ = syscall.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })

	var logs syncBuffer
	newTestNode(t, func(c *Config) {
		c.NodeID, c.Logger = node, slog.New(slog.NewTextHandler(&logs, nil))
	})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the leftover process still runs after Open")
	}
	if _, err := os.Stat(group); err == nil {
		t.Error("the leftover group is still there")
	}
	if !strings.Contains(logs.String(), "sb-left") {
		t.Errorf("log %q does not name the sandbox", logs.String())
	}
}
