package actor

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
	"github.com/sandgate/sandgate/runtime"
	"golang.org/x/sys/unix"
)

const testDiskBytes = 8 << 20

// requireDiskImages fails the test when this Linux machine cannot mount images: CI
// runs on machines that can (root, loop devices, mkfs.ext4).
func requireDiskImages(tb testing.TB) {
	tb.Helper()
	if err := diskimg.Supported(); err != nil {
		tb.Fatalf("workspace disk images must work on this machine: %v", err)
	}
}

// smallFS mounts a tmpfs of size bytes in a temporary directory, so a test that fills
// disks can fill nothing else, and unmounts it when the test ends (after the nodes
// on it closed: cleanups run last-registered first).
func smallFS(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		tb.Fatalf("mount a tmpfs for the data dir: %v", err)
	}
	tb.Cleanup(func() {
		// The kernel clears a loop device, which holds its image file open, just after
		// the image's unmount returns: the tmpfs may be busy for a moment. A device
		// held longer is named with what keeps its filesystem alive.
		const patience = 30 * time.Second // as long as a move waits for a device
		for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
			err := unix.Unmount(dir, 0)
			if !errors.Is(err, unix.EBUSY) {
				if err != nil {
					tb.Errorf("unmount the test's tmpfs: %v", err)
				}
				return
			}
			if time.Now().After(deadline) {
				loops, _ := diskimg.LoopsUnder(dir)
				var held []string
				for _, l := range loops {
					held = append(held, fmt.Sprintf("/dev/loop%d (%s) kept alive by %q", l.N, l.File, diskimg.Holders(l.N)))
				}
				tb.Fatalf("the test's tmpfs is busy %v after the test: %v", patience, held)
			}
		}
	})
	return dir
}

// diskNode opens a node with disk images on dataDir (a fresh small tmpfs if ""),
// whose sandboxes get testDiskBytes of disk.
func diskNode(tb testing.TB, dataDir string) *testNode {
	tb.Helper()
	requireDiskImages(tb)
	if dataDir == "" {
		dataDir = smallFS(tb, 64<<20)
	}
	return newTestNode(tb, func(c *Config) {
		c.DataDir = dataDir
		c.DiskImages = true
		c.Defaults.DiskBytes = testDiskBytes
	})
}

// loopsHolding lists the loop devices bound to image.
func loopsHolding(tb testing.TB, image string) []string {
	tb.Helper()
	devs, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, d := range devs {
		if b, err := os.ReadFile(d); err == nil && strings.TrimSuffix(string(b), "\n") == image {
			out = append(out, d)
		}
	}
	return out
}

// wantUnmounted checks that no mount is left under the node's workspaces and, within
// a bounded wait for the kernel to clear them, that no loop device holds image.
func wantUnmounted(tb testing.TB, n *testNode, image string) {
	tb.Helper()
	// An activation leaves the registry, then unmounts.
	eventually(tb, 10*time.Second, "the images to be unmounted", func() bool {
		left, err := diskimg.MountsUnder(n.workspacesDir())
		must(tb, err)
		return len(left) == 0 && n.MountedImages() == 0
	})
	eventually(tb, 30*time.Second, "the loop device to let "+image+" go", func() bool { // as long as a move waits
		return len(loopsHolding(tb, image)) == 0
	})
}

func execIn(tb testing.TB, n *testNode, sb, command string) runtime.ExecResult {
	tb.Helper()
	res, err := n.Exec(tctx(tb), sb, runtime.ExecOptions{Command: command})
	must(tb, err)
	return res
}

// A sandbox that fills its disk gets ENOSPC, from a process and from the files API,
// while another sandbox's writes and the node's own storage keep working: the data
// dir is a small tmpfs, so nothing else can fill.
func TestDiskQuotaFull(t *testing.T) {
	n := diskNode(t, "")
	mustCreate(t, n, "full")
	mustCreate(t, n, "other")
	if got := n.MountedImages(); got != 2 {
		t.Fatalf("MountedImages %d after two creates; want 2", got)
	}
	res := execIn(t, n, "full", "dd if=/dev/zero of=big bs=1M count=64")
	if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte("No space left")) {
		t.Fatalf("dd of 64 MiB into an 8 MiB disk: exit %d, stderr %q; want ENOSPC", res.ExitCode, res.Stderr)
	}
	ws, err := n.Workspace(tctx(t), "full")
	must(t, err)
	err = ws.WriteFile("more", bytes.NewReader(make([]byte, 1<<20)), nil)
	_ = ws.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("files API write to a full workspace: %v; want ENOSPC", err)
	}
	in, err := n.GetSandbox(tctx(t), "full")
	must(t, err)
	if u := in.Usage; u == nil || u.DiskBytes < testDiskBytes/2 || u.DiskBytes > testDiskBytes {
		t.Fatalf("usage of a full 8 MiB disk: %+v; want between 4 and 8 MiB", in.Usage)
	}

	if res := execIn(t, n, "other", "dd if=/dev/zero of=f bs=1M count=2 && echo ok"); res.ExitCode != 0 {
		t.Fatalf("another sandbox's write: exit %d, %q", res.ExitCode, res.Stderr)
	}
	_, err = n.PostEvent(tctx(t), "full", "agent.progress", []byte(`{"still":"here"}`))
	must(t, err) // actors.db is on the data dir, outside every image
	mustCreate(t, n, "third")
	if got := n.Stats().MountedImages; got != 3 {
		t.Fatalf("Stats().MountedImages %d; want 3", got)
	}
}

// A passivated sandbox holds no mount and no loop device; activation mounts its image
// again with its files; delete removes the image.
func TestDiskLifecycle(t *testing.T) {
	n := diskNode(t, "")
	mustCreate(t, n, "life")
	image := n.imagePath("life")
	if res := execIn(t, n, "life", "echo kept > f"); res.ExitCode != 0 {
		t.Fatalf("write: exit %d, %q", res.ExitCode, res.Stderr)
	}
	passivateAll(t, n)
	wantUnmounted(t, n, image)
	if _, err := os.Stat(filepath.Join(n.workspaceDir("life"), "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a passivated sandbox's file is visible on the host: %v", err)
	}

	ws, err := n.Workspace(tctx(t), "life") // activates the actor, not a runtime
	must(t, err)
	f, _, err := ws.Open("f")
	must(t, err)
	b := make([]byte, 16)
	k, _ := f.Read(b)
	_ = f.Close()
	_ = ws.Close()
	if string(b[:k]) != "kept\n" {
		t.Fatalf("after activation: %q; want the file written before passivation", b[:k])
	}
	if got := n.MountedImages(); got != 1 {
		t.Fatalf("MountedImages %d after activation; want 1", got)
	}

	must(t, n.DeleteSandbox(tctx(t), "life"))
	wantUnmounted(t, n, image)
	if _, err := os.Stat(image); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("image after delete: %v; want it removed", err)
	}
	if _, err := os.Stat(n.workspaceDir("life")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace after delete: %v; want it removed", err)
	}
}

// Hibernation (idle TTL) unmounts the image; the files API mounts it again without
// waking the sandbox, and work that wakes it runs on it.
func TestDiskHibernateUnmounts(t *testing.T) {
	n := diskNode(t, "")
	in := mustCreate(t, n, "sleepy")
	execIn(t, n, "sleepy", "echo x > f")
	n.clock.Advance(in.Budget.IdleTTL + time.Second)
	eventually(t, 30*time.Second, "hibernation", func() bool {
		in, err := n.GetSandbox(tctx(t), "sleepy")
		return err == nil && in.State == StateHibernated
	})
	if got := n.MountedImages(); got != 0 {
		t.Fatalf("MountedImages %d while hibernated; want 0", got)
	}
	ws, err := n.Workspace(tctx(t), "sleepy")
	must(t, err)
	f, _, err := ws.Open("f")
	must(t, err)
	_ = f.Close()
	_ = ws.Close()
	in, err = n.GetSandbox(tctx(t), "sleepy")
	must(t, err)
	if in.State != StateHibernated || n.MountedImages() != 1 {
		t.Fatalf("after a files API read: state %s, %d mounted; want hibernated with its image mounted", in.State, n.MountedImages())
	}
	// Woken by work instead: the runtime starts on the image, mounted again.
	must(t, n.DeleteSandbox(tctx(t), "sleepy"))
	in = mustCreate(t, n, "woken")
	execIn(t, n, "woken", "echo y > f")
	n.clock.Advance(in.Budget.IdleTTL + time.Second)
	eventually(t, 30*time.Second, "hibernation", func() bool {
		in, err := n.GetSandbox(tctx(t), "woken")
		return err == nil && in.State == StateHibernated
	})
	if got := n.MountedImages(); got != 0 {
		t.Fatalf("MountedImages %d while hibernated; want 0", got)
	}
	if res := execIn(t, n, "woken", "cat f"); string(res.Stdout) != "y\n" {
		t.Fatalf("exec that wakes a hibernated sandbox: %q, %q; want its file", res.Stdout, res.Stderr)
	}
}

// A mount a crashed run of the node left behind is unmounted by the next Open on the
// same data dir, and only that node's: another data dir's mount stays. A leftover still
// busy is detached lazily, and its sandbox is not mounted again until it lets go.
func TestDiskSweepAtOpen(t *testing.T) {
	requireDiskImages(t)
	data := smallFS(t, 64<<20)
	n := diskNode(t, data)
	mustCreate(t, n, "crashed")
	execIn(t, n, "crashed", "echo survived > f")
	closeNode(t, n)
	// Close returns once the image is unmounted; its loop device may let the image go
	// a little later (at once on an idle machine). Attaching it again before then would
	// put a second filesystem on the file, one that does not see f yet.
	wantUnmounted(t, n, n.imagePath("crashed"))

	// What a kill -9 leaves: the image still mounted on the workspace. And a mount of
	// another node, on its own data dir.
	leftover, err := diskimg.Attach(n.imagePath("crashed"), n.workspaceDir("crashed"))
	must(t, err)
	t.Cleanup(func() { _, _ = leftover.Unmount() }) // a no-op once swept
	// A process of the crashed run that is not dead yet holds a file open on it.
	held, err := os.Open(filepath.Join(n.workspaceDir("crashed"), "f"))
	must(t, err)
	defer held.Close()
	other := diskNode(t, "")
	mustCreate(t, other, "neighbour")

	n2 := reopen(t, n.cfg, n.clock) // the sweep detaches the busy leftover lazily
	left, err := diskimg.MountsUnder(n2.workspacesDir())
	must(t, err)
	if len(left) != 0 {
		t.Fatalf("mounts after Open: %q; want the leftover swept", left)
	}
	if got := other.MountedImages(); got != 1 {
		t.Fatalf("the other node has %d images mounted; want its 1 untouched", got)
	}
	if theirs, _ := diskimg.MountsUnder(other.workspacesDir()); len(theirs) != 1 {
		t.Fatalf("the other node's mounts: %q; want its sandbox's", theirs)
	}
	// Mounting the image again while the leftover still holds it would corrupt it.
	if _, err := n2.Workspace(tctx(t), "crashed"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("activation while the swept leftover still holds the image: %v; want ErrUnavailable", err)
	}
	must(t, held.Close())
	if res := execIn(t, n2, "crashed", "cat f"); string(res.Stdout) != "survived\n" {
		t.Fatalf("after the sweep: %q, %q; want the file back", res.Stdout, res.Stderr)
	}
}

// A workspace made without an image (images off, or before them) stays a plain
// directory when images are turned on: its files stay where they are, unquota'd.
func TestDiskPlainWorkspaceKept(t *testing.T) {
	requireDiskImages(t)
	data := smallFS(t, 64<<20)
	n := newTestNode(t, func(c *Config) { c.DataDir = data })
	mustCreate(t, n, "old")
	execIn(t, n, "old", "echo old > f")
	closeNode(t, n)

	n.cfg.DiskImages = true
	n2 := reopen(t, n.cfg, n.clock)
	if res := execIn(t, n2, "old", "cat f"); string(res.Stdout) != "old\n" {
		t.Fatalf("plain workspace after images were turned on: %q, %q", res.Stdout, res.Stderr)
	}
	if n2.MountedImages() != 0 {
		t.Fatal("a plain workspace got an image")
	}
	if _, err := os.Stat(n2.imagePath("old")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("image of a plain workspace: %v; want none", err)
	}
	mustCreate(t, n2, "new")
	if n2.MountedImages() != 1 {
		t.Fatal("a sandbox created with images on has no image mounted")
	}
}

// A mount still busy at passivation (a files API handle open) is detached lazily; the
// next activation waits for the image to be let go rather than mount it twice, and
// mounts it once it is.
func TestDiskBusyAtPassivation(t *testing.T) {
	n := diskNode(t, "")
	mustCreate(t, n, "busy")
	ws, err := n.Workspace(tctx(t), "busy")
	must(t, err)
	must(t, ws.WriteFile("f", strings.NewReader("x"), nil))
	f, _, err := ws.Open("f")
	must(t, err)
	must(t, n.Deactivate(tctx(t), "busy")) // unmount: busy for a second, then lazy
	if held := loopsHolding(t, n.imagePath("busy")); len(held) != 1 {
		_ = f.Close()
		t.Fatalf("loop devices holding the image with a file open: %q; want 1", held)
	}
	_, err = n.Workspace(tctx(t), "busy")
	if !errors.Is(err, ErrUnavailable) {
		_ = f.Close()
		t.Fatalf("activation while the old mount holds the image: %v; want ErrUnavailable", err)
	}
	must(t, f.Close())
	must(t, ws.Close())
	// The kernel lets the loop device go in a work item of its own after the last
	// reference closed: until then activation says to retry, as a client would.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ws, err = n.Workspace(tctx(t), "busy")
		if err == nil || !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			break
		}
	}
	must(t, err)
	f, _, err = ws.Open("f")
	must(t, err)
	_ = f.Close()
	_ = ws.Close()
}

// On a machine that cannot mount images, DiskImages logs that quotas are not enforced
// and why, and sandboxes get plain workspaces that work.
func TestDiskImagesUnsupported(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	n := newTestNode(t, func(c *Config) {
		c.DiskImages = true
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.diskSupported = func() error { return fmt.Errorf("%w: no loop devices (test)", diskimg.ErrUnsupported) }
	})
	if !strings.Contains(logs.String(), "workspace disk quotas are not enforced") || !strings.Contains(logs.String(), "no loop devices (test)") {
		t.Fatalf("the node's log does not say quotas are off and why:\n%s", logs.String())
	}
	mustCreate(t, n, "plain")
	if res := execIn(t, n, "plain", "echo ok > f && cat f"); string(res.Stdout) != "ok\n" {
		t.Fatalf("exec in a plain workspace: %q, %q", res.Stdout, res.Stderr)
	}
	if n.MountedImages() != 0 {
		t.Fatal("an image was mounted on a machine that cannot")
	}
	if _, err := os.Stat(n.imagePath("plain")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("image: %v; want none", err)
	}
}
