package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWorkspaceLongNames: a name of up to MaxNameLen bytes is written, read and listed
// (the temporary name beside it must not overflow NAME_MAX), and a longer element is
// ErrInvalid naming the limit, on every operation, with nothing touched.
func TestWorkspaceLongNames(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	for _, n := range []int{228, 229, 240, MaxNameLen} {
		name := strings.Repeat("n", n)
		if err := w.WriteFile("long/"+name, strings.NewReader("x"), nil); err != nil {
			t.Fatalf("write %d-byte name: %v", n, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "long", name)); err != nil || string(b) != "x" {
			t.Fatalf("read %d-byte name: %q, %v", n, b, err)
		}
	}
	long := strings.Repeat("n", MaxNameLen+1)
	ops := []struct {
		name string
		do   func(p string) error
	}{
		{"write", func(p string) error { return w.WriteFile(p, strings.NewReader("x"), nil) }},
		{"mkdir", func(p string) error { return w.Mkdir(p, true) }},
		{"stat", func(p string) error { _, err := w.Stat(p); return err }},
		{"remove", func(p string) error { return w.Remove(p, true) }},
	}
	for _, op := range ops {
		for _, p := range []string{long, "sub/" + long + "/x"} {
			t.Run(op.name+"/"+p[:8], func(t *testing.T) {
				err := op.do(p)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "255") {
					t.Fatalf("%s of a %d-byte element: %v, want ErrInvalid naming 255", op.name, len(long), err)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", long)); err == nil {
		t.Fatal("a refused path was made")
	}
}

// TestWorkspaceRemoveStaleTemps: temporary files left by a write of another process
// (either name form) are removed wherever they are; this process's own, which may be
// a write in flight, and files that merely look alike stay.
func TestWorkspaceRemoveStaleTemps(t *testing.T) {
	t.Parallel()
	w, dir, outside := wsNewTest(t)
	other := "0badc0de"
	if other == wsTempTag {
		other = "0badc0df"
	}
	stale := []string{
		"sub/.b.txt.sandgate-0123456789ab.tmp", // the older form, from a killed PUT
		".sandgate-" + other + "-0123456789ab.tmp",
		"sub/deep/.sandgate-" + other + "-aaaaaaaaaaaa.tmp",
	}
	kept := []string{
		".sandgate-" + wsTempTag + "-0123456789ab.tmp", // a write of this process
		".sandgate-notes.tmp",
		"sub/.b.txt.sandgate-xyz.tmp",
		"sandgate-" + other + "-0123456789ab.tmp",
	}
	for _, p := range append(slices.Clone(stale), kept...) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// One beyond a link pointing out of the workspace must not be reached.
	outsideTemp := filepath.Join(outside, ".sandgate-"+other+"-0123456789ab.tmp")
	if err := os.WriteFile(outsideTemp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := w.RemoveStaleTemps()
	if err != nil || n != len(stale) {
		t.Fatalf("removed %d, %v; want %d", n, err, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale %s still there: %v", p, err)
		}
	}
	for _, p := range append(kept, "a.txt", "sub/b.txt") {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := os.Stat(outsideTemp); err != nil {
		t.Errorf("a file outside the workspace was removed: %v", err)
	}
}

// TestWorkspaceTempNameLength: the temporary name has a fixed length and is recognised
// as stale only with another process's tag.
func TestWorkspaceTempNameLength(t *testing.T) {
	t.Parallel()
	name := filepath.Base(wsTempName("a/b"))
	if len(name) != wsTempLen || filepath.Dir(wsTempName("a/b")) != "a/b" {
		t.Fatalf("temp name %q: %d bytes, want %d in a/b", name, len(name), wsTempLen)
	}
	if wsStaleTemp(name) {
		t.Fatalf("own temp %q counted stale", name)
	}
}

// TestWorkspaceWriteSyncs: a write fsyncs the file before it is renamed into place,
// then its directory, and the parent of every directory it made; mkdir fsyncs the
// parents of what it made. Not parallel: it replaces wsSync.
func TestWorkspaceWriteSyncs(t *testing.T) {
	w, dir, _ := wsNewTest(t)
	var synced []string
	var target, content string // of the write under test
	wsSync = func(f *os.File) error {
		name, _ := filepath.Rel(dir, f.Name())
		if strings.Contains(name, wsTempPrefix) {
			// The content must be synced while the target does not show it yet.
			if b, _ := os.ReadFile(filepath.Join(dir, target)); string(b) == content {
				t.Errorf("%s already holds %q when its content is synced", target, b)
			}
			name = filepath.Join(filepath.Dir(name), "<temp>")
		}
		synced = append(synced, name)
		return f.Sync()
	}
	t.Cleanup(func() { wsSync = (*os.File).Sync })
	tests := []struct {
		name  string
		write string // a file to write, or
		mkdir string // a directory to make (-p unless the name is "mkdir")
		want  []string
	}{
		{name: "new parents", write: "n1/n2/f.txt", want: []string{"n1", ".", "n1/n2/<temp>", "n1/n2"}},
		{name: "replace", write: "n1/n2/f.txt", want: []string{"n1/n2/<temp>", "n1/n2"}},
		{name: "existing dir", write: "sub/b.txt", want: []string{"sub/<temp>", "sub"}},
		{name: "top level", write: "top.txt", want: []string{"<temp>", "."}},
		{name: "mkdir", mkdir: "sub/m", want: []string{"sub"}},
		{name: "mkdir parents", mkdir: "sub/p/q/r", want: []string{"sub/p/q", "sub/p", "sub"}},
		{name: "mkdir existing", mkdir: "sub/p", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synced, target, content = nil, tt.write, "content of "+tt.name
			var err error
			if tt.write != "" {
				err = w.WriteFile(tt.write, strings.NewReader(content), nil)
			} else {
				err = w.Mkdir(tt.mkdir, tt.name != "mkdir")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(synced, tt.want) {
				t.Fatalf("synced %q, want %q", synced, tt.want)
			}
		})
	}
}
