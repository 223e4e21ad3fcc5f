package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wsNewLinkTest is wsNewTest with more links: chains, links inside subdirectories,
// dangling links, an absolute link and a loop.
func wsNewLinkTest(tb testing.TB) (w *Workspace, dir, outside string) {
	tb.Helper()
	w, dir, outside = wsNewTest(tb)
	links := map[string]string{
		"chain":            "ina",      // -> a.txt
		"chainout":         "insecret", // -> ../outside/secret
		"indeep":           "sub/deep", // a directory link
		"sub/deep/upb":     "../b.txt", // relative to sub/deep, not to indeep's parent
		"sub/deep/outdeep": "../../../outside/secret",
		"dang":             "new.txt", // dangling, creates its target
		"dangsub":          "sub/deep/new.txt",
		"dangdeep":         "nodir/x.txt",  // dangling into a missing directory
		"abs":              dir + "/a.txt", // absolute, inside: taken as the sandbox sees it
		"absdir":           dir + "/sub",
		"absup":            dir + "/../outside/secret", // absolute, then climbs out
		"absws":            dir,
		"loop1":            "loop2",
		"loop2":            "loop1",
		"self":             ".",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			tb.Fatal(err)
		}
	}
	return w, dir, outside
}

var wsFollowTests = []struct {
	name    string
	in      string
	want    string
	wantErr error
}{
	{name: "plain", in: "sub/b.txt", want: "sub/b.txt"},
	{name: "root", in: ".", want: "."},
	{name: "missing kept", in: "x/y/z.txt", want: "x/y/z.txt"},
	{name: "link", in: "ina", want: "a.txt"},
	{name: "chain", in: "chain", want: "a.txt"},
	{name: "dir link", in: "insub/b.txt", want: "sub/b.txt"},
	{name: "dotdot from the link's real dir", in: "indeep/upb", want: "sub/b.txt"},
	{name: "missing under dir link", in: "insub/n/m.txt", want: "sub/n/m.txt"},
	{name: "dangling", in: "dang", want: "new.txt"},
	{name: "dangling into subdir", in: "dangsub", want: "sub/deep/new.txt"},
	{name: "dangling into missing dir", in: "dangdeep", wantErr: fs.ErrNotExist},
	{name: "dangling link as a parent", in: "dang/x", wantErr: fs.ErrNotExist},
	{name: "self", in: "self", want: "."},
	{name: "out relative", in: "insecret", wantErr: ErrEscapes},
	{name: "out chain", in: "chainout", wantErr: ErrEscapes},
	{name: "out from deep", in: "indeep/outdeep", wantErr: ErrEscapes},
	{name: "out parent", in: "outrel/secret", wantErr: ErrEscapes},
	{name: "absolute inside", in: "abs", want: "a.txt"},
	{name: "absolute dir inside", in: "absdir/b.txt", want: "sub/b.txt"},
	{name: "absolute to the workspace", in: "absws/sub/b.txt", want: "sub/b.txt"},
	{name: "absolute from deep", in: "sub/deep/../../absdir/deep", want: "sub/deep"},
	{name: "absolute then out", in: "absup", wantErr: ErrEscapes},
	{name: "absolute outside", in: "out/secret", wantErr: ErrEscapes},
	{name: "absolute root", in: "toroot/etc", wantErr: ErrEscapes},
	{name: "loop", in: "loop1", wantErr: ErrInvalid},
	{name: "file as dir", in: "a.txt/x", wantErr: ErrNotDir},
}

func TestWorkspaceFollow(t *testing.T) {
	t.Parallel()
	w, _, _ := wsNewLinkTest(t)
	for _, tt := range wsFollowTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := wsFollow(w.root, w.prefixes, tt.in)
			if tt.wantErr != nil {
				if err = wsMapErr(err); !errors.Is(err, tt.wantErr) {
					t.Fatalf("wsFollow(%q) = %q, %v; want %v", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("wsFollow(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func FuzzWorkspaceFollow(f *testing.F) {
	for _, tt := range wsFollowTests {
		f.Add(tt.in)
	}
	w, _, _ := wsNewLinkTest(f)
	f.Fuzz(func(t *testing.T, in string) {
		rel, err := wsResolve(w.prefixes, in)
		if err != nil {
			return
		}
		got, err := wsFollow(w.root, w.prefixes, rel)
		if err != nil {
			return
		}
		if got != "." && !filepath.IsLocal(got) || got != filepath.Clean(got) {
			t.Fatalf("wsFollow(%q) = %q: not a clean local path", rel, got)
		}
	})
}

// wsLinkState captures every link of dir with its target, to prove writes left them be.
func wsLinkState(tb testing.TB, dir string) string {
	tb.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		b.WriteString(p + " -> " + target + "\n")
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func TestWorkspaceWriteThroughLink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		target  string // where the content must land, relative to the workspace
		wantErr error
	}{
		{name: "link", path: "ina", target: "a.txt"},
		{name: "chain", path: "chain", target: "a.txt"},
		{name: "through dir link", path: "indeep/upb", target: "sub/b.txt"},
		{name: "file under dir link", path: "insub/b.txt", target: "sub/b.txt"},
		{name: "dangling creates target", path: "dang", target: "new.txt"},
		{name: "dangling into subdir", path: "dangsub", target: "sub/deep/new.txt"},
		{name: "dangling into missing dir", path: "dangdeep", wantErr: fs.ErrNotExist},
		{name: "link out", path: "insecret", wantErr: ErrEscapes},
		{name: "chain out", path: "chainout", wantErr: ErrEscapes},
		{name: "link out from deep", path: "indeep/outdeep", wantErr: ErrEscapes},
		{name: "absolute link", path: "abs", target: "a.txt"},
		{name: "absolute link out", path: "absup", wantErr: ErrEscapes},
		{name: "dir link out", path: "out", wantErr: ErrEscapes},
		{name: "link to dir", path: "insub", wantErr: ErrIsDir},
		{name: "link to workspace", path: "self", wantErr: ErrIsDir},
		{name: "loop", path: "loop1", wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, dir, outside := wsNewLinkTest(t)
			links, before := wsLinkState(t, dir), wsOutsideState(t, outside)
			err := w.WriteFile(tt.path, strings.NewReader("through"), nil)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := wsLinkState(t, dir); got != links {
				t.Errorf("links changed:\n%s\nwant\n%s", got, links)
			}
			if got := wsOutsideState(t, outside); got != before {
				t.Errorf("outside changed:\n%s\nwant\n%s", got, before)
			}
			if _, err := os.Stat(dir + "/nodir"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("nodir made: %v", err)
			}
			if tt.target == "" {
				return
			}
			fi, err := os.Lstat(filepath.Join(dir, tt.target))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
				t.Fatalf("target %s: %v, %v", tt.target, fi, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, tt.target)); string(b) != "through" {
				t.Errorf("target %s = %q", tt.target, b)
			}
		})
	}
}

func TestWorkspaceWriteKeepsMode(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	for p, m := range map[string]fs.FileMode{"run.sh": 0o755, "private": 0o600, "none": 0} {
		if err := os.WriteFile(dir+"/"+p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir+"/"+p, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("run.sh", dir+"/runlink"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string       // written with mode below
		mode     *fs.FileMode // nil: keep
		file     string       // the file checked
		wantMode fs.FileMode
	}{
		{name: "exec bit kept", path: "run.sh", file: "run.sh", wantMode: 0o755},
		{name: "private kept", path: "private", file: "private", wantMode: 0o600},
		{name: "no permissions kept", path: "none", file: "none", wantMode: 0},
		{name: "kept through link", path: "runlink", file: "run.sh", wantMode: 0o755},
		{name: "new file default", path: "fresh", file: "fresh", wantMode: 0o644},
		{name: "explicit mode wins", path: "private", mode: ptr(fs.FileMode(0o640)), file: "private", wantMode: 0o640},
		{name: "explicit zero mode", path: "run.sh", mode: ptr(fs.FileMode(0)), file: "run.sh", wantMode: 0},
	}
	for _, tt := range tests {
		if err := w.WriteFile(tt.path, strings.NewReader("new"), tt.mode); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, tt.file))
		if err != nil || fi.Mode().Perm() != tt.wantMode {
			t.Errorf("%s: %v %v, want %v", tt.name, fi, err, tt.wantMode)
		}
	}
}

func TestWorkspaceWriteDirSpelling(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	for _, p := range []string{"sub2/", "sub2//", "sub/", "a.txt/", "x/y/", "sub2/.", "sub/deep/..", dir + "/sub2/", "ina/"} {
		err := w.WriteFile(p, strings.NewReader("x"), nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "names a directory") {
			t.Errorf("write %q: %v, want ErrInvalid naming a directory", p, err)
		}
	}
	for _, p := range []string{"sub2", "x"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s made: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(dir + "/a.txt"); string(b) != "hello" {
		t.Errorf("a.txt = %q", b)
	}
	// The workspace itself stays a conflict, however it is spelt.
	for _, p := range []string{dir + "/", "./", "sub/.."} {
		if err := w.WriteFile(p, strings.NewReader("x"), nil); !errors.Is(err, ErrIsDir) {
			t.Errorf("write %q: %v, want ErrIsDir", p, err)
		}
	}
}

func TestWorkspaceMkdirThroughLink(t *testing.T) {
	t.Parallel()
	w, dir, outside := wsNewLinkTest(t)
	before := wsOutsideState(t, outside)
	tests := []struct {
		name    string
		path    string
		parents bool
		wantErr error
	}{
		{name: "parents on dir link", path: "insub", parents: true},
		{name: "parents on chain to dir", path: "indeep", parents: true},
		{name: "under dir link", path: "insub/new/deeper", parents: true},
		{name: "no parents on dir link", path: "insub", wantErr: ErrExist},
		{name: "parents on file link", path: "ina", parents: true, wantErr: ErrExist},
		{name: "parents on link out", path: "out", parents: true, wantErr: ErrEscapes},
		{name: "parents on relative link out", path: "outrel", parents: true, wantErr: ErrEscapes},
		{name: "parents on absolute link", path: "toroot", parents: true, wantErr: ErrEscapes},
		{name: "parents on loop", path: "loop1", parents: true, wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		err := w.Mkdir(tt.path, tt.parents)
		if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && err != nil {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
	if fi, err := os.Lstat(dir + "/sub/new/deeper"); err != nil || !fi.IsDir() {
		t.Errorf("sub/new/deeper: %v", err)
	}
	if after := wsOutsideState(t, outside); after != before {
		t.Errorf("outside changed:\n%s\nwant\n%s", after, before)
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
