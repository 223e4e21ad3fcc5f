package actor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeleteUnknownOutcomeKeepsImage: with disk images, a delete whose commit never
// landed keeps the image and the files in it, mounted again by the next activation;
// one that landed has its image removed once storage shows it.
func TestDeleteUnknownOutcomeKeepsImage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply bool
	}{
		{name: "applied anyway", apply: true},
		{name: "never applied", apply: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireDiskImages(t)
			var store *outcomeStore
			n := newTestNode(t, func(c *Config) {
				c.DataDir = smallFS(t, 64<<20)
				c.DiskImages = true
				c.Defaults.DiskBytes = testDiskBytes
				bolt, err := OpenBolt(filepath.Join(c.DataDir, "outcome.db"))
				must(t, err)
				t.Cleanup(func() { _ = bolt.Close() })
				store = &outcomeStore{Storage: bolt}
				c.Storage = store
			})
			mustCreate(t, n, "di")
			image := n.imagePath("di")
			f := putFile(t, n, "di", "in-image.txt") // the image is mounted on the workspace
			store.arm("di", tc.apply)
			wantUnknown(t, "delete", n.DeleteSandbox(tctx(t), "di"))
			wantUnmounted(t, n, image)
			if tc.apply {
				eventually(t, 20*time.Second, "the image of the landed delete to go", func() bool {
					_, err := os.Lstat(image)
					return errors.Is(err, fs.ErrNotExist)
				})
				_, err := n.GetSandbox(tctx(t), "di")
				wantErr(t, err, ErrNotFound)
				return
			}
			wantPath(t, image, true)
			_, err := n.GetSandbox(tctx(t), "di") // activates: mounts the kept image
			must(t, err)
			got, err := os.ReadFile(f)
			must(t, err)
			if string(got) != "user data" {
				t.Fatalf("file in the image holds %q", got)
			}
			if m := n.MountedImages(); m != 1 {
				t.Fatalf("MountedImages %d after activation; want 1", m)
			}
		})
	}
}
