package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"golang.org/x/sys/unix"
)

// TestFilesFullWorkspace: with disk images, a file write to a sandbox whose disk_bytes
// budget is used up answers 429 budget_exceeded, without Retry-After; the sandbox, the
// server's own storage and another sandbox keep working, /metrics shows the mounted
// images, and the sandbox object its disk usage. The data dir is a 64 MiB tmpfs.
func TestFilesFullWorkspace(t *testing.T) {
	data := smallDataDir(t, 64<<20)
	ts := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.DataDir = data
		c.DiskImages = true
		c.Defaults = actor.Budget{DiskBytes: 8 << 20}
	}})
	if got := metricValue(t, ts, "sandgate_disk_images_mounted"); got != 0 {
		t.Fatalf("sandgate_disk_images_mounted %d at start; want 0", got)
	}
	ts.sandbox("full")
	ts.sandbox("other")
	r := ts.do("PUT", "/v1/sandboxes/full/files?path=big", strings.Repeat("x", 12<<20))
	if r.status != http.StatusTooManyRequests || r.errorCode(t) != codeBudgetExceeded {
		t.Fatalf("12 MiB into an 8 MiB workspace: %d %s; want 429 budget_exceeded", r.status, r.body)
	}
	if ra := r.header.Get("Retry-After"); ra != "" {
		t.Fatalf("Retry-After %q on a full workspace; want none", ra)
	}
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/other/files?path=small", strings.Repeat("y", 1<<20))
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/full/events", map[string]any{"type": "agent.still", "data": map[string]any{}})
	var ex struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/full/exec", map[string]any{"command": "ls -A"}).json(t, &ex)
	if ex.ExitCode != 0 || ex.Stdout != "" {
		t.Fatalf("workspace after the refused write: exit %d, %q; want it empty (no partial file)", ex.ExitCode, ex.Stdout)
	}
	// The refused write's bytes were freed: 4 MiB fits in what is left of 8.
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/full/files?path=after", strings.Repeat("z", 4<<20))

	var sb struct {
		Usage struct {
			DiskBytes int64 `json:"disk_bytes"`
		} `json:"usage"`
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/other", nil).json(t, &sb)
	if sb.Usage.DiskBytes < 1<<20 || sb.Usage.DiskBytes > 8<<20 {
		t.Fatalf("usage.disk_bytes %d after a 1 MiB file; want 1-8 MiB", sb.Usage.DiskBytes)
	}
	if got := metricValue(t, ts, "sandgate_disk_images_mounted"); got != 2 {
		t.Fatalf("sandgate_disk_images_mounted %d; want 2", got)
	}
}

// smallDataDir mounts a tmpfs of size bytes on a new temp dir, for a server's data
// directory that a full disk image must not let fill the machine's disk; it is
// unmounted after the server's shutdown (a cleanup registered before the server's
// runs after it). It fails the test where disk images cannot work.
func smallDataDir(t *testing.T, size int) string {
	t.Helper()
	if err := actor.DiskImagesSupported(); err != nil {
		t.Fatalf("workspace disk images must work on this machine: %v", err)
	}
	data := t.TempDir()
	if err := unix.Mount("tmpfs", data, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mount a tmpfs for the data dir: %v", err)
	}
	t.Cleanup(func() {
		var err error
		eventually(t, 60*time.Second, "the test's tmpfs to unmount", func() bool {
			err = unix.Unmount(data, 0) // busy while the kernel clears the loop devices
			return err != unix.EBUSY
		})
		if err != nil {
			t.Errorf("unmount the test's tmpfs: %v", err)
		}
	})
	return data
}
