package actor

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
