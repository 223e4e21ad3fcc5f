package actor

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
)

// TestWorkspaceMoveDiskImage moves the workspace of a sandbox with a disk image from
// a to b, as a planned move does: its files arrive in a new image of the same size on
// a node with images (the quota holds there), and in a plain directory on a node
// without; the sandbox's next activation on b says nothing was lost.
func TestWorkspaceMoveDiskImage(t *testing.T) {
	t.Parallel()
	requireDiskImages(t)
	tests := []struct {
		name      string
		bImages   bool
		wantImage bool
	}{
		{name: "to a node with images", bImages: true, wantImage: true},
		{name: "to a node without", bImages: false, wantImage: false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openTestBolt(t)
			ownA, ownB := &ownership{}, &ownership{}
			ownB.deny.Store(true)
			id := "wi" + string(rune('0'+i))
			a := newTestNode(t, func(c *Config) {
				c.NodeID, c.Storage, c.DataDir = id+"-a", st, smallFS(t, 64<<20)
				c.DiskImages, c.Defaults.DiskBytes = true, testDiskBytes
				ownA.config(c)
			})
			b := newTestNode(t, func(c *Config) {
				c.NodeID, c.Storage, c.DataDir = id+"-b", st, smallFS(t, 64<<20)
				c.DiskImages, c.Defaults.DiskBytes = tt.bImages, testDiskBytes
				ownB.config(c)
			})
			mustCreate(t, a, "wi")
			execIn(t, a, "wi", "mkdir -p d && echo hi > d/f && ln -s d/f l && head -c 1048576 /dev/zero > z")
			must(t, a.Deactivate(tctx(t), "wi"))
			wantUnmounted(t, a, a.imagePath("wi"))
			streamWorkspace(t, a.Node, b.Node, "wi")
			wantUnmounted(t, a, a.imagePath("wi"))
			if fi, err := os.Stat(b.imagePath("wi")); tt.wantImage != (err == nil) || (err == nil && fi.Size() != testDiskBytes) {
				t.Fatalf("b's image: %v, %v; want one of %d bytes: %v", fi, err, testDiskBytes, tt.wantImage)
			}
			ownA.deny.Store(true)
			ownB.deny.Store(false)
			if got := execIn(t, b, "wi", "cat l; wc -c < z").Stdout; string(got) != "hi\n1048576\n" {
				t.Fatalf("b's workspace: %q", got)
			}
			moved := movedEvents(t, b, "wi")
			if len(moved) != 1 || len(moved[0]["lost"].([]any)) != 0 {
				t.Fatalf("sandbox.moved: %v, want one that lost nothing", moved)
			}
			if tt.wantImage {
				res := execIn(t, b, "wi", "head -c 16777216 /dev/zero > big 2>&1; echo $?")
				if strings.TrimSpace(string(res.Stdout)) == "0" {
					t.Fatalf("16 MiB fit in b's 8 MiB image: %q", res.Stdout)
				}
			}
		})
	}
}

// TestWorkspaceImportBroken: a stream that breaks installs nothing and removes what
// an earlier stay on the node left, so the sandbox's next arrival claims its
// workspace lost rather than present a stale one; no temporary entry is left.
func TestWorkspaceImportBroken(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	dir := n.workspaceDir("wb")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "stale"), []byte("old"), 0o644))
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, 700)) // part of a header block
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	err := n.ImportWorkspace(tctx(t), "wb", pr, ImportOptions{})
	if err == nil {
		t.Fatal("a broken stream was imported")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale workspace is still there: %v", err)
	}
	ents, err := os.ReadDir(n.workspacesDir())
	must(t, err)
	if len(ents) != 0 {
		t.Fatalf("workspaces dir holds %v", ents)
	}
	if n.takeImported("wb") {
		t.Fatal("a failed import is noted as arrived")
	}
}

// slowLoops stands in for the kernel's check that a loop device still holds an image
// (Config.diskHeld): until armed, every device holds its image; once armed, it holds
// it for three times a request's wait (Config.diskWait) past the first check, then as
// the kernel says. A wait bounded by a request's gives up before then, whenever it
// began.
type slowLoops struct {
	wait  time.Duration
	mu    sync.Mutex
	armed bool
	first time.Time // the first check once armed
}

func (s *slowLoops) config(c *Config) {
	c.diskWait, c.diskHeld = s.wait, s.held
}

func (s *slowLoops) arm() {
	s.mu.Lock()
	s.armed = true
	s.mu.Unlock()
}

func (s *slowLoops) held(loop int, image string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return true
	}
	if s.first.IsZero() {
		s.first = time.Now()
	}
	return time.Since(s.first) < 3*s.wait || diskimg.Held(loop, image)
}

// TestWorkspaceMoveWaitsForLoopDevice: the kernel lets an image's loop device go some
// time after the unmount returned. A request's mount gives up past a short bound (an
// unavailable answer, retried), but a planned move's export, after the deactivation
// that ended the sandbox here, and its import, after it filled the new image, wait
// longer: giving up there loses the workspace.
func TestWorkspaceMoveWaitsForLoopDevice(t *testing.T) {
	t.Parallel()
	requireDiskImages(t)
	st := openTestBolt(t)
	ownA, ownB := &ownership{}, &ownership{}
	ownB.deny.Store(true)
	loopsA, loopsB := &slowLoops{wait: 50 * time.Millisecond}, &slowLoops{wait: 50 * time.Millisecond}
	a := newTestNode(t, func(c *Config) {
		c.NodeID, c.Storage, c.DataDir = "wl-a", st, smallFS(t, 64<<20)
		c.DiskImages, c.Defaults.DiskBytes = true, testDiskBytes
		ownA.config(c)
		loopsA.config(c)
	})
	b := newTestNode(t, func(c *Config) {
		c.NodeID, c.Storage, c.DataDir = "wl-b", st, smallFS(t, 64<<20)
		c.DiskImages, c.Defaults.DiskBytes = true, testDiskBytes
		ownB.config(c)
		loopsB.config(c)
	})
	mustCreate(t, a, "wl")
	execIn(t, a, "wl", "echo kept > f")
	must(t, a.Deactivate(tctx(t), "wl"))
	loopsA.arm()
	loopsB.arm()
	streamWorkspace(t, a.Node, b.Node, "wl")
	ownA.deny.Store(true)
	ownB.deny.Store(false)
	if got := execIn(t, b, "wl", "cat f").Stdout; string(got) != "kept\n" {
		t.Fatalf("b's workspace: %q", got)
	}
	if moved := movedEvents(t, b, "wl"); len(moved) != 1 || len(moved[0]["lost"].([]any)) != 0 {
		t.Fatalf("sandbox.moved: %v, want one that lost nothing", moved)
	}
}

// TestDropWorkspaceWaitsForLoopDevice: the old owner removes its copy of a workspace
// a planned move delivered right after the export's unmount; it waits for the loop
// device as the export does, rather than keep the copy until its next start.
func TestDropWorkspaceWaitsForLoopDevice(t *testing.T) {
	t.Parallel()
	requireDiskImages(t)
	loops := &slowLoops{wait: 50 * time.Millisecond}
	n := newTestNode(t, func(c *Config) {
		c.DataDir = smallFS(t, 64<<20)
		c.DiskImages, c.Defaults.DiskBytes = true, testDiskBytes
		loops.config(c)
	})
	mustCreate(t, n, "wd")
	execIn(t, n, "wd", "echo gone > f")
	must(t, n.Deactivate(tctx(t), "wd"))
	loops.arm()
	must(t, n.DropWorkspace(tctx(t), "wd"))
	for _, p := range []string{n.workspaceDir("wd"), n.imagePath("wd")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after the drop: %v", p, err)
		}
	}
}
