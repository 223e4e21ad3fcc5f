package runtime

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// wsNewTest makes a workspace with a few files, an outside directory with a
// secret, and symlinks that point out of the workspace.
func wsNewTest(tb testing.TB) (w *Workspace, dir, outside string) {
	tb.Helper()
	base, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	dir = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{dir + "/sub/deep", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	files := map[string]string{dir + "/a.txt": "hello", dir + "/sub/b.txt": "bee", outside + "/secret": "s3cret"}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	links := map[string]string{
		dir + "/toroot":   "/",
		dir + "/out":      outside,
		dir + "/outrel":   "../outside",
		dir + "/insecret": "../outside/secret",
		dir + "/ina":      "a.txt",
		dir + "/insub":    "sub",
	}
	for l, target := range links {
		if err := os.Symlink(target, l); err != nil {
			tb.Fatal(err)
		}
	}
	w, err = OpenWorkspace(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w, dir, outside
}

// wsOutsideState captures the outside directory to prove nothing there changed.
func wsOutsideState(tb testing.TB, outside string) string {
	tb.Helper()
	var b strings.Builder
	err := filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if d.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func TestWorkspaceEscapes(t *testing.T) {
	t.Parallel()
	w, dir, outside := wsNewTest(t)
	before := wsOutsideState(t, outside)
	// Every op below adds to these paths, so none of them names a link itself.
	paths := []string{
		"..", "../outside", "sub/../../outside", "/etc", "/", outside,
		dir + "/../outside", "toroot/etc", "toroot/tmp", "out", "outrel", "insecret", "toroot",
	}
	ops := []struct {
		name string
		do   func(p string) error
	}{
		{"open", func(p string) error {
			f, _, err := w.Open(p + "/secret")
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"readdir", func(p string) error { _, err := w.ReadDir(p + "/"); return err }},
		{"write", func(p string) error { return w.WriteFile(p+"/x", strings.NewReader("x"), nil) }},
		{"write existing", func(p string) error { return w.WriteFile(p+"/secret", strings.NewReader("x"), nil) }},
		{"stat", func(p string) error { _, err := w.Stat(p + "/secret"); return err }},
		{"remove", func(p string) error { return w.Remove(p+"/secret", true) }},
		{"mkdir", func(p string) error { return w.Mkdir(p+"/newdir", true) }},
	}
	for _, op := range ops {
		for _, p := range paths {
			if err := op.do(p); !errors.Is(err, ErrEscapes) {
				t.Errorf("%s %q: %v, want ErrEscapes", op.name, p, err)
			}
		}
	}
	// Following a link out is refused; naming the link itself stays inside.
	for _, p := range []string{"insecret", "toroot", "out"} {
		if f, _, err := w.Open(p); !errors.Is(err, ErrEscapes) {
			t.Errorf("open %q: %v, want ErrEscapes", p, err)
			if f != nil {
				f.Close()
			}
		}
		if _, err := w.ReadDir(p); !errors.Is(err, ErrEscapes) {
			t.Errorf("readdir %q: %v, want ErrEscapes", p, err)
		}
		fi, err := w.Stat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("stat %q: %v %v, want the link", p, fi, err)
		}
	}
	// Writing through a link out is refused and leaves the link; removing a link removes
	// only the link.
	if err := w.WriteFile("insecret", strings.NewReader("mine"), nil); !errors.Is(err, ErrEscapes) {
		t.Errorf("write through link out: %v, want ErrEscapes", err)
	}
	if target, err := os.Readlink(dir + "/insecret"); err != nil || target != "../outside/secret" {
		t.Errorf("link after write: %q %v", target, err)
	}
	if err := w.Remove("toroot", true); err != nil {
		t.Errorf("remove link to /: %v", err)
	}
	if err := w.Remove("out", false); err != nil {
		t.Errorf("remove link out: %v", err)
	}
	if after := wsOutsideState(t, outside); after != before {
		t.Errorf("outside changed:\n%s\nwant\n%s", after, before)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("/etc/passwd: %v", err)
	}
}

func TestWorkspaceRead(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	tests := []struct {
		name    string
		path    string
		want    string
		wantErr error
	}{
		{name: "relative", path: "a.txt", want: "hello"},
		{name: "absolute", path: dir + "/sub/b.txt", want: "bee"},
		{name: "inner symlink", path: "ina", want: "hello"},
		{name: "through dir link", path: "insub/b.txt", want: "bee"},
		{name: "dir", path: "sub", wantErr: ErrIsDir},
		{name: "root", path: dir, wantErr: ErrIsDir},
		{name: "missing", path: "nope", wantErr: fs.ErrNotExist},
		{name: "missing is ours too", path: "sub/nope", wantErr: ErrFileNotFound},
		{name: "file as dir", path: "a.txt/x", wantErr: ErrFileNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, fi, err := w.Open(tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil || string(b) != tt.want || fi.Size() != int64(len(tt.want)) {
				t.Errorf("read %q (size %d), %v; want %q", b, fi.Size(), err, tt.want)
			}
		})
	}
}

func TestWorkspaceOpenFIFO(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	if err := wsMkfifo(dir + "/fifo"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Open("fifo"); !errors.Is(err, ErrInvalid) {
		t.Errorf("open fifo: %v, want ErrInvalid", err)
	}
}

func TestWorkspaceReadDir(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	ents, err := w.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name+":"+e.Type)
	}
	want := "a.txt:file ina:symlink insecret:symlink insub:symlink out:symlink outrel:symlink sub:dir toroot:symlink"
	if strings.Join(got, " ") != want {
		t.Errorf("entries = %v\nwant %v", got, want)
	}
	if ents[0].Size != 5 || ents[0].Mode.Perm() != 0o644 || ents[0].ModTime.IsZero() {
		t.Errorf("a.txt = %+v", ents[0])
	}
	if _, err := w.ReadDir("a.txt"); !errors.Is(err, ErrNotDir) {
		t.Errorf("readdir file: %v", err)
	}
	if _, err := w.ReadDir("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readdir missing: %v", err)
	}
	if ents, err := w.ReadDir("insub"); err != nil || len(ents) != 2 {
		t.Errorf("readdir through link: %v %v", ents, err)
	}
}

func TestWorkspaceWriteFile(t *testing.T) {
	t.Parallel()
	w, dir, _ := wsNewTest(t)
	tests := []struct {
		name     string
		path     string
		data     string
		mode     *fs.FileMode
		wantMode fs.FileMode
		wantErr  error
	}{
		{name: "new", path: "new.txt", data: "n", wantMode: 0o644},
		{name: "parents", path: "x/y/z.bin", data: "\x00\x01", mode: ptr(fs.FileMode(0o600)), wantMode: 0o600},
		{name: "exec mode", path: dir + "/run.sh", data: "#!/bin/sh\n", mode: ptr(fs.FileMode(0o755)), wantMode: 0o755},
		{name: "overwrite", path: "a.txt", data: "replaced", wantMode: 0o644},
		{name: "dir", path: "sub", wantErr: ErrIsDir},
		{name: "root", path: ".", wantErr: ErrIsDir},
		{name: "parent is file", path: "a.txt/child", wantErr: ErrNotDir},
	}
	for _, tt := range tests {
		err := w.WriteFile(tt.path, strings.NewReader(tt.data), tt.mode)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		p := tt.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != tt.wantMode {
			t.Errorf("%s: %v %v, want regular %v", tt.name, fi, err, tt.wantMode)
		}
		if b, _ := os.ReadFile(p); string(b) != tt.data {
			t.Errorf("%s: content %q", tt.name, b)
		}
	}
	// No temp files remain.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(p, ".sandgate-") {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}

// TestWorkspaceWriteAtomic has readers race a writer: each read sees one whole version.
func TestWorkspaceWriteAtomic(t *testing.T) {
	t.Parallel()
	w, _, _ := wsNewTest(t)
	v1, v2 := bytes.Repeat([]byte("1"), 1<<20), bytes.Repeat([]byte("2"), 1<<20)
	if err := w.WriteFile("f", bytes.NewReader(v1), nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := v1
			if i%2 == 1 {
				v = v2
			}
			if err := w.WriteFile("f", bytes.NewReader(v), nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 50 {
		f, _, err := w.Open("f")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || !(bytes.Equal(b, v1) || bytes.Equal(b, v2)) {
			t.Fatalf("read a torn file (len %d): %v", len(b), err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestWorkspaceRemoveMkdir(t *testing.T) {
	t.Parallel()
	w, dir, outside := wsNewTest(t)
	steps := []struct {
		name    string
		do      func() error
		wantErr error
	}{
		{"remove missing", func() error { return w.Remove("nope", false) }, fs.ErrNotExist},
		{"remove missing recursive", func() error { return w.Remove("nope", true) }, ErrFileNotFound},
		{"remove full dir", func() error { return w.Remove("sub", false) }, ErrNotEmpty},
		{"remove root", func() error { return w.Remove(dir, true) }, ErrInvalid},
		{"remove file", func() error { return w.Remove("a.txt", false) }, nil},
		{"remove link to outside", func() error { return w.Remove("out", false) }, nil},
		{"remove link to root recursively", func() error { return w.Remove("toroot", true) }, nil},
		{"remove dir recursively", func() error { return w.Remove("sub", true) }, nil},
		{"mkdir", func() error { return w.Mkdir("d", false) }, nil},
		{"mkdir exists", func() error { return w.Mkdir("d", false) }, ErrExist},
		{"mkdir exists is fs.ErrExist", func() error { return w.Mkdir("d", false) }, fs.ErrExist},
		{"mkdir exists with parents", func() error { return w.Mkdir("d", true) }, nil},
		{"mkdir no parent", func() error { return w.Mkdir("p/q", false) }, fs.ErrNotExist},
		{"mkdir parents", func() error { return w.Mkdir(dir+"/p/q/r", true) }, nil},
		{"mkdir over file", func() error { return w.Mkdir("ina", true) }, ErrExist},
		{"mkdir under file", func() error { return w.WriteFile("f", strings.NewReader(""), nil) }, nil},
		{"mkdir under file 2", func() error { return w.Mkdir("f/x", true) }, ErrNotDir},
		{"remove empty dir", func() error { return w.Remove("d", false) }, nil},
	}
	for _, st := range steps {
		err := st.do()
		if st.wantErr == nil && err != nil || st.wantErr != nil && !errors.Is(err, st.wantErr) {
			t.Errorf("%s: err = %v, want %v", st.name, err, st.wantErr)
		}
	}
	for _, p := range []string{"a.txt", "out", "toroot", "sub", "d"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if fi, err := os.Stat(dir + "/p/q/r"); err != nil || !fi.IsDir() {
		t.Errorf("p/q/r: %v", err)
	}
	if b, err := os.ReadFile(outside + "/secret"); err != nil || string(b) != "s3cret" {
		t.Errorf("outside secret: %q %v", b, err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("/etc/passwd: %v", err)
	}
}

func TestOpenWorkspaceSymlinkedDir(t *testing.T) {
	t.Parallel()
	_, dir, _ := wsNewTest(t)
	link := filepath.Join(filepath.Dir(dir), "wslink")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWorkspace(link)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{link + "/a.txt", dir + "/a.txt"} {
		if fi, err := w.Stat(p); err != nil || fi.Size() != 5 {
			t.Errorf("stat %q: %v", p, err)
		}
	}
	if _, err := OpenWorkspace(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open missing: %v", err)
	}
}
