package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpackWorkspace feeds arbitrary streams to UnpackWorkspace: whatever they hold,
// nothing is written outside the parent directory, and the target is either installed
// (the stream was accepted) or left as it was, with no temporary entry behind.
func FuzzUnpackWorkspace(f *testing.F) {
	seed := func(entries ...*tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range entries {
			_ = tw.WriteHeader(h)
			if h.Size > 0 {
				_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		_ = tw.Close()
		return b.Bytes()
	}
	f.Add(seed(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "a/f", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}))
	f.Add(seed(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}))
	f.Add(seed(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "..", Mode: 0o777}, &tar.Header{Name: "l/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}))
	f.Add(seed(&tar.Header{Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o555}, &tar.Header{Name: "ro/f", Typeflag: tar.TypeReg, Size: 1, Mode: 0o4755}))
	f.Add(seed(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}, &tar.Header{Name: "g", Typeflag: tar.TypeLink, Linkname: "f"}))
	f.Add(seed(&tar.Header{Name: "g", Typeflag: tar.TypeLink, Linkname: "../../outside"}))
	f.Add(seed(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../..", Mode: 0o777}, &tar.Header{Name: "g", Typeflag: tar.TypeLink, Linkname: "l/outside"}))
	f.Add([]byte("not a tar stream"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		top := t.TempDir()
		// A file beside the workspaces that a hard link in the stream might name.
		if err := os.WriteFile(filepath.Join(top, "outside"), []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		parent := filepath.Join(top, "workspaces")
		if err := os.MkdirAll(filepath.Join(parent, "sb"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "sb", "old"), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := UnpackWorkspace(context.Background(), bytes.NewReader(stream), parent, "sb", UnpackOptions{MaxBytes: 1 << 20})
		ents, rerr := os.ReadDir(top)
		if rerr != nil || len(ents) != 2 || ents[0].Name() != "outside" || ents[1].Name() != "workspaces" {
			t.Fatalf("something was written beside the workspaces directory: %v %v", ents, rerr)
		}
		if fi, err := os.Stat(filepath.Join(top, "outside")); err != nil || linkCount(fi) != 1 {
			t.Fatalf("the file beside the workspaces got another name (%d names, %v)", linkCount(fi), err)
		}
		ents, _ = os.ReadDir(parent)
		if len(ents) != 1 || ents[0].Name() != "sb" {
			t.Fatalf("workspaces directory holds %v (err %v)", ents, err)
		}
		_, oldErr := os.Stat(filepath.Join(parent, "sb", "old"))
		if err != nil && oldErr != nil {
			t.Fatalf("a refused stream (%v) changed the target", err)
		}
		if err == nil && oldErr == nil && !strings.Contains(string(stream), "old") {
			t.Fatal("an accepted stream left the old target's files")
		}
	})
}

// linkCount returns how many names (hard links) fi's file has.
func linkCount(fi os.FileInfo) uint64 {
	if fi == nil {
		return 0
	}
	_, n := inodeOf(fi)
	return n
}
