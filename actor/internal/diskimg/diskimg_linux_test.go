package diskimg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireSupport fails the test when this Linux machine cannot mount images: CI runs
// on machines that can, so a missing feature is a broken machine, not a skip.
func requireSupport(t testing.TB) {
	t.Helper()
	if err := Supported(); err != nil {
		t.Fatalf("disk images must work on this machine (root, /dev/loop-control, mkfs.ext4): %v", err)
	}
}

// newImage creates an image of size bytes in a temporary directory and returns it
// with an empty directory to mount it on.
func newImage(t testing.TB, size int64) (image, dir string) {
	t.Helper()
	requireSupport(t)
	root := t.TempDir()
	image, dir = filepath.Join(root, "disk.img"), filepath.Join(root, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Create(ctx, image, size); err != nil {
		t.Fatal(err)
	}
	return image, dir
}

// attach mounts image on dir and unmounts it when the test ends (if the test did not).
func attach(t testing.TB, image, dir string) *Mount {
	t.Helper()
	m, err := Attach(image, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// waitReleased waits, bounded, until loop device n lets image go: the kernel clears an
// autoclear device as the filesystem's last user leaves, which may finish just after
// the unmount returns.
func waitReleased(t testing.TB, n int, image string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for Held(n, image) {
		if time.Now().After(deadline) {
			t.Fatalf("/dev/loop%d still holds %s", n, image)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isMounted(t testing.TB, dir string) bool {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	root, err := mountRoot(fd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestImageLifecycle(t *testing.T) {
	t.Parallel()
	image, dir := newImage(t, 8<<20)
	if fi, err := os.Stat(image); err != nil || fi.Size() != 8<<20 {
		t.Fatalf("image: %v, %v; want 8 MiB", fi, err)
	}
	m := attach(t, image, dir)
	if !isMounted(t, dir) || !Held(m.Loop, image) {
		t.Fatalf("after Attach: mounted %v, held %v; want both", isMounted(t, dir), Held(m.Loop, image))
	}
	before, err := Usage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Total <= 4<<20 || before.Total > 8<<20 {
		t.Fatalf("total %d bytes; want between 4 MiB and the 8 MiB image", before.Total)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := Usage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.Used - before.Used; grew < 1<<20 {
		t.Fatalf("used grew by %d bytes after a 1 MiB write; want at least 1 MiB", grew)
	}
	big, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	_, werr := big.Write(make([]byte, 16<<20))
	if cerr := big.Close(); werr == nil {
		werr = cerr
	}
	if !errors.Is(werr, unix.ENOSPC) {
		t.Fatalf("writing 16 MiB to an 8 MiB image: %v; want ENOSPC", werr)
	}
	if lazy, err := m.Unmount(); err != nil || lazy {
		t.Fatalf("Unmount: lazy %v, %v; want a plain unmount", lazy, err)
	}
	if isMounted(t, dir) {
		t.Fatal("still mounted after Unmount")
	}
	waitReleased(t, m.Loop, image)
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file visible in the bare directory after unmount: %v", err)
	}
	_ = attach(t, image, dir) // files survive a remount
	if b, err := os.ReadFile(filepath.Join(dir, "a")); err != nil || len(b) != 1<<20 {
		t.Fatalf("after remount: %d bytes, %v; want the 1 MiB file", len(b), err)
	}
}

func TestCreateSizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size, got int64
	}{
		{"below the minimum is rounded up", 1, MinSize},
		{"exact", 16 << 20, 16 << 20},
		{"large and sparse", 1 << 30, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			image, _ := newImage(t, tt.size)
			var st unix.Stat_t
			if err := unix.Stat(image, &st); err != nil {
				t.Fatal(err)
			}
			if st.Size != tt.got {
				t.Fatalf("size %d; want %d", st.Size, tt.got)
			}
			if alloc := st.Blocks * 512; alloc > 8<<20 {
				t.Fatalf("%d bytes allocated on the host for a fresh image; want a sparse file (under 8 MiB)", alloc)
			}
		})
	}
}

func TestAttachRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, image, dir string) string // returns the dir to mount on
		want  error
	}{
		{"symlink to a directory", func(t *testing.T, image, dir string) string {
			link := filepath.Join(filepath.Dir(dir), "link")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, unix.ENOTDIR},
		{"mount point", func(t *testing.T, image, dir string) string {
			attach(t, image, dir)
			return dir
		}, ErrMounted},
		{"missing directory", func(t *testing.T, image, dir string) string {
			return filepath.Join(dir, "nope")
		}, unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			image, dir := newImage(t, MinSize)
			target := tt.setup(t, image, dir)
			m, err := Attach(image, target)
			if !errors.Is(err, tt.want) {
				if m != nil {
					_, _ = m.Unmount()
				}
				t.Fatalf("Attach: %v; want %v", err, tt.want)
			}
		})
	}
}

func TestUnmountBusyDetachesLazily(t *testing.T) {
	t.Parallel()
	image, dir := newImage(t, MinSize)
	m, err := Attach(image, dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "open"))
	if err != nil {
		_, _ = m.Unmount()
		t.Fatal(err)
	}
	lazy, err := m.Unmount()
	if err != nil || !lazy {
		_ = f.Close()
		t.Fatalf("Unmount with a file open: lazy %v, %v; want a lazy detach", lazy, err)
	}
	if isMounted(t, dir) {
		t.Error("a lazily detached mount is still on its directory")
	}
	if !Held(m.Loop, image) {
		t.Error("the device let the image go while a file on it is open")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, m.Loop, image)
}

func TestSweep(t *testing.T) {
	t.Parallel()
	requireSupport(t)
	mine, other := t.TempDir(), t.TempDir()
	var mounts []*Mount
	for i, root := range []string{mine, mine, other} {
		image, dir := newImage(t, MinSize)
		target := filepath.Join(root, "workspaces", string(rune('a'+i)))
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		m, err := Attach(image, target)
		if err != nil {
			t.Fatal(err)
		}
		_ = dir
		mounts = append(mounts, m)
		t.Cleanup(func() { _, _ = m.Unmount() }) // a no-op once swept
	}
	swept, err := Sweep(mine, mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 2 {
		t.Fatalf("swept %q; want the 2 mounts under %s", swept, mine)
	}
	for _, m := range mounts[:2] {
		if isMounted(t, m.Dir) {
			t.Errorf("%s still mounted after Sweep", m.Dir)
		}
		waitReleased(t, m.Loop, m.Image)
	}
	if !isMounted(t, mounts[2].Dir) {
		t.Errorf("Sweep of %s unmounted %s, another node's", mine, mounts[2].Dir)
	}
}

func TestMountsUnder(t *testing.T) {
	t.Parallel()
	info := []byte(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 7:0 / /data/workspaces/a rw,nosuid - ext4 /dev/loop0 rw
41 22 7:1 / /data/workspaces/with\040space rw - ext4 /dev/loop1 rw
42 22 7:2 / /data/workspaces rw - tmpfs tmpfs rw
43 22 7:3 / /data/workspacesX/b rw - ext4 /dev/loop3 rw
44 22 7:4 / /data/workspaces/back\134slash rw - ext4 /dev/loop4 rw
short line
`)
	tests := []struct {
		name, dir string
		want      []string
	}{
		{"below only, escapes undone", "/data/workspaces", []string{"/data/workspaces/a", "/data/workspaces/with space", `/data/workspaces/back\slash`}},
		{"nothing below", "/elsewhere", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mountsUnder(info, tt.dir)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q; want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q; want %q", got, tt.want)
				}
			}
		})
	}
}

func FuzzMountsUnder(f *testing.F) {
	f.Add([]byte("40 22 7:0 / /d/w/a rw - ext4 /dev/loop0 rw\n"), "/d/w")
	f.Add([]byte(`41 22 7:1 / /d/w/x\040y\ rw - ext4 /dev/loop1 rw`), "/d/w")
	f.Fuzz(func(t *testing.T, info []byte, dir string) {
		for _, p := range mountsUnder(info, dir) {
			if len(p) <= len(dir)+1 || p[:len(dir)+1] != dir+"/" {
				t.Fatalf("%q is not below %q", p, dir)
			}
		}
	})
}

// TestAttachConcurrent attaches 20 images at once: concurrent callers are handed the
// same free device by LOOP_CTL_GET_FREE, and all but one must ask again (EBUSY).
func TestAttachConcurrent(t *testing.T) {
	t.Parallel()
	const n = 20
	var mounts [n]*Mount
	var errs [n]error
	images, dirs := make([]string, n), make([]string, n)
	for i := range n {
		images[i], dirs[i] = newImage(t, MinSize)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mounts[i], errs[i] = Attach(images[i], dirs[i])
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Attach %d: %v", i, errs[i])
			continue
		}
		m := mounts[i]
		t.Cleanup(func() { _, _ = m.Unmount() })
		if seen[m.Loop] || !Held(m.Loop, images[i]) {
			t.Errorf("image %d on /dev/loop%d: shared %v, held %v; want a device of its own", i, m.Loop, seen[m.Loop], Held(m.Loop, images[i]))
		}
		seen[m.Loop] = true
	}
}

// TestSupported: a machine that cannot mount images says why, with ErrUnsupported.
func TestSupported(t *testing.T) {
	t.Parallel()
	found := func() (string, error) { return "/usr/sbin/mkfs.ext4", nil }
	missing := func() (string, error) { return findMkfs("mkfs.nosuchfs", t.TempDir()) }
	tests := []struct {
		name    string
		euid    int
		mkfs    func() (string, error)
		control string
		want    string // "" means supported
	}{
		{"root with everything", 0, found, loopControl, ""},
		{"not root", 1000, found, loopControl, "needs root (running as uid 1000)"},
		{"no mkfs.ext4", 0, missing, loopControl, "mkfs.nosuchfs not found"},
		{"no loop devices", 0, found, "/dev/no-such-loop-control", "no loop devices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := supported(tt.euid, tt.mkfs, tt.control)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("supported: %v; want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("supported: %v; want ErrUnsupported saying %q", err, tt.want)
			}
		})
	}
}
