package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenWorkspaceIn opens a workspace by its name in the workspaces directory: its
// own directory works, with relative and absolute paths; a symlink in its place, to a
// directory outside or to another workspace, is refused and what it points to is not
// touched; a missing one is not found; a name that is not one element is invalid.
func TestOpenWorkspaceIn(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	outside := t.TempDir()
	mustWrite := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"own", "other"} {
		if err := os.Mkdir(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(filepath.Join(parent, d, "f"), d)
	}
	mustWrite(filepath.Join(outside, "marker"), "outside")
	mustWrite(filepath.Join(parent, "file"), "not a dir")
	for link, to := range map[string]string{"out": outside, "sib": "other", "dangling": filepath.Join(outside, "none")} {
		if err := os.Symlink(to, filepath.Join(parent, link)); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		ws   string
		want error // nil: opens and reads f as "own"
	}{
		{name: "own directory", ws: "own"},
		{name: "symlink outside", ws: "out", want: ErrInvalid},
		{name: "symlink to another workspace", ws: "sib", want: ErrInvalid},
		{name: "dangling symlink", ws: "dangling", want: ErrInvalid},
		{name: "regular file", ws: "file", want: ErrInvalid},
		{name: "missing", ws: "gone", want: ErrFileNotFound},
		{name: "parent", ws: "..", want: ErrInvalid},
		{name: "two elements", ws: "own/sub", want: ErrInvalid},
		{name: "empty", ws: "", want: ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, err := OpenWorkspaceIn(parent, tc.ws)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("OpenWorkspaceIn(%q) = %v, want %v", tc.ws, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if w.Dir() != filepath.Join(parent, tc.ws) {
				t.Fatalf("Dir() = %q", w.Dir())
			}
			for _, p := range []string{"f", filepath.Join(parent, tc.ws, "f")} {
				f, _, err := w.Open(p)
				if err != nil {
					t.Fatalf("Open(%q): %v", p, err)
				}
				b := make([]byte, 8)
				n, _ := f.Read(b)
				f.Close()
				if string(b[:n]) != "own" {
					t.Fatalf("Open(%q) read %q", p, b[:n])
				}
			}
		})
	}
	t.Cleanup(func() {
		ents, err := os.ReadDir(outside)
		if err != nil || len(ents) != 1 || ents[0].Name() != "marker" {
			t.Errorf("the directory outside changed: %v %v", ents, err)
		}
	})
}
