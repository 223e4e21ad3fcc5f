package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// FuzzResolveCwd: whatever the cwd option, the result is the workspace or a directory
// inside it (symlinks resolved), or ErrInvalid.
func FuzzResolveCwd(f *testing.F) {
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "in")); err != nil {
		f.Fatal(err)
	}
	s, err := New(&Config{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close(context.Background()) }) // its cgroups
	for _, seed := range []string{"", ".", "a/b", "../", "a/../../x", "/etc", dir, dir + "/a", "out", "out/..", "in/b", "a//b/./", "\x00", "..."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cwd string) {
		got, err := s.resolveCwd(cwd)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("resolveCwd(%q): %v does not wrap ErrInvalid", cwd, err)
			}
			return
		}
		real, err := filepath.EvalSymlinks(got)
		if err != nil {
			t.Fatalf("resolveCwd(%q) = %q: %v", cwd, got, err)
		}
		if !within(s.realDir, real) {
			t.Fatalf("resolveCwd(%q) = %q (%q) is outside %q", cwd, got, real, s.realDir)
		}
	})
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// FuzzValidID: validID is exactly the API's id syntax.
func FuzzValidID(f *testing.F) {
	for _, seed := range []string{"a", "t-1_x", "", "-a", "A", "a b", "proc_0123456789abcdef"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidID(id), idRE.MatchString(id); got != want {
			t.Fatalf("ValidID(%q) = %v, want %v", id, got, want)
		}
	})
}
