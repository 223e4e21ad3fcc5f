package gateway

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/actor"
)

// TestDrainStreamsWorkspaceImage drains the owner of a sandbox whose workspace is a
// disk image: its files arrive on the new owner in an image of the same size, so the
// quota still holds there (a write past it is 429), nothing was lost, and a removes
// its image once the move completed.
func TestDrainStreamsWorkspaceImage(t *testing.T) {
	if err := actor.DiskImagesSupported(); err != nil {
		t.Fatalf("workspace disk images must work on this machine: %v", err)
	}
	const budget = 8 << 20
	tr := newTrio(t, func(_ int, c *Config) {
		c.RebalanceRate = 1000
		c.DataDir = smallDataDir(t, 128<<20)
		c.DiskImages = true
		c.Defaults = actor.Budget{DiskBytes: budget}
	})
	b := tr.node("b")
	sb := tr.ownedBy("wsi", "a")
	mustSetUp(t, b, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	mustSetUp(t, b, http.StatusNoContent, "PUT", filesPath(sb)+"?path=d/kept.txt", "kept\n")
	mustSetUp(t, b, http.StatusNoContent, "PUT", filesPath(sb)+"?path=half.bin", strings.Repeat("h", 3<<20))
	if _, err := os.Stat(filepath.Join(tr.node("a").srv.cfg.DataDir, "disks", sb+".img")); err != nil {
		t.Fatalf("the sandbox has no image on a: %v", err)
	}
	owner, degraded := drainedMove(t, tr, sb)
	wantPlannedMove(t, b, sb, owner, degraded)
	if got := string(b.mustSettled(http.StatusOK, "GET", filesPath(sb)+"?path=d/kept.txt", nil).body); got != "kept\n" {
		t.Fatalf("d/kept.txt after the move: %q", got)
	}
	img := filepath.Join(tr.node(string(owner)).srv.cfg.DataDir, "disks", sb+".img")
	if fi, err := os.Stat(img); err != nil || fi.Size() != budget {
		t.Fatalf("the new owner's image: %v %v, want %d bytes", fi, err, budget)
	}
	// Through b, which forwards it, streamed (over 1 MiB): the owner answers 429 before
	// it read the whole body, and that answer must reach the client as it is.
	r := b.do("PUT", filesPath(sb)+"?path=more.bin", strings.Repeat("m", 6<<20))
	if r.status != http.StatusTooManyRequests {
		o, _, _ := b.srv.cluster.Owner(sb)
		ls := b.do("GET", filesPath(sb)+"?path=.", nil)
		t.Fatalf("6 MiB more into the 8 MiB workspace after the move to %s (owner now %s): %d %s (request %s), want 429; "+
			"the workspace holds %s; on the owner it is %s; events %v",
			owner, o, r.status, r.body, r.header.Get("X-Request-Id"), ls.body,
			mountState(tr.node(string(o)), sb), movedData(t, b, sb))
	}
	assertNoIncoming(t, tr.node(string(owner)))
	// The old owner removes its image and directory once the move completed.
	a := tr.node("a")
	eventually(t, clusterPatience, "a to remove its copy of "+sb, func() bool { return !workspaceOn(a, sb) })
}

// mountState says whether sb's workspace on ts is a mount point, and how full the
// filesystem there is: a write that escaped the quota landed either in the bare
// directory under an unmounted image, or in an image of the wrong size.
func mountState(ts *testServer, sb string) string {
	dir := ts.hostWorkspace(sb)
	var here, parent unix.Stat_t
	if err := unix.Stat(dir, &here); err != nil {
		return err.Error()
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return err.Error()
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return err.Error()
	}
	used, size := (fs.Blocks-fs.Bfree)*uint64(fs.Bsize), fs.Blocks*uint64(fs.Bsize)
	return fmt.Sprintf("mounted %v (a filesystem of its own), %d of %d bytes used", here.Dev != parent.Dev, used, size)
}
