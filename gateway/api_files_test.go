package gateway

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFiles(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("f1")
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/f1/files?path=a/b/c.txt&mode=0600", "hello\x00world")
	r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/f1/files?path=a/b/c.txt", nil)
	if string(r.body) != "hello\x00world" {
		t.Fatalf("read %q", r.body)
	}
	var dir struct{ Entries []dirEntryJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/f1/files?path=a/b", nil).json(t, &dir)
	if len(dir.Entries) != 1 || dir.Entries[0].Name != "c.txt" || dir.Entries[0].Type != "file" || dir.Entries[0].Mode != "0600" || dir.Entries[0].Size != 11 {
		t.Fatalf("listing %+v", dir)
	}
	// The workspace's absolute path, as exec's pwd prints it, works as a prefix.
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/f1/exec", map[string]any{"command": "pwd"}).json(t, &res)
	abs := strings.TrimSpace(res.Stdout) + "/a/b/c.txt"
	if r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/f1/files?path="+abs, nil); string(r.body) != "hello\x00world" {
		t.Fatalf("absolute path read %q", r.body)
	}
	ts.must(http.StatusNoContent, "POST", "/v1/sandboxes/f1/files/mkdir", map[string]any{"path": "x/y", "parents": true})
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/f1/exec", map[string]any{"command": "ln -s / root; ln -s ../../etc up"})

	tests := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"missing file", "GET", "/v1/sandboxes/f1/files?path=nope", nil, http.StatusNotFound},
		{"dot dot", "GET", "/v1/sandboxes/f1/files?path=../../etc/passwd", nil, http.StatusBadRequest},
		{"other absolute path", "GET", "/v1/sandboxes/f1/files?path=/etc/passwd", nil, http.StatusBadRequest},
		{"symlink to root", "GET", "/v1/sandboxes/f1/files?path=root/etc/passwd", nil, http.StatusBadRequest},
		{"write through symlink", "PUT", "/v1/sandboxes/f1/files?path=root/tmp/sandgate-escape", "x", http.StatusBadRequest},
		{"bad mode", "PUT", "/v1/sandboxes/f1/files?path=m&mode=9z", "x", http.StatusBadRequest},
		{"no path", "PUT", "/v1/sandboxes/f1/files", "x", http.StatusBadRequest},
		{"non-empty dir", "DELETE", "/v1/sandboxes/f1/files?path=a", nil, http.StatusConflict},
		{"mkdir exists", "POST", "/v1/sandboxes/f1/files/mkdir", map[string]any{"path": "x"}, http.StatusConflict},
		{"mkdir no parents", "POST", "/v1/sandboxes/f1/files/mkdir", map[string]any{"path": "p/q"}, http.StatusNotFound},
		{"too large", "PUT", "/v1/sandboxes/f1/files?path=big", strings.Repeat("x", 16<<20+1), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			r.errorCode(t)
		})
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/f1/files?path=a&recursive=true", nil)
	if r := ts.do("GET", "/v1/sandboxes/f1/files?path=a", nil); r.status != http.StatusNotFound {
		t.Fatalf("after recursive delete: %d", r.status)
	}
}

// filesLinkSetup makes sandbox sb with a/b/c.txt, links into and out of its workspace,
// and an outside file the links may aim at. It returns the workspace's absolute path
// and the outside file.
func filesLinkSetup(t *testing.T, ts *testServer, sb string) (ws, secret string) {
	t.Helper()
	secret = filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts.sandbox(sb)
	files := "/v1/sandboxes/" + sb + "/files"
	ts.must(http.StatusNoContent, "PUT", files+"?path=a/b/c.txt", "old")
	var res execJSON
	ws = ts.hostWorkspace(sb)
	rel, err := filepath.Rel(ts.guestWorkspace(sb), secret)
	if err != nil {
		t.Fatal(err)
	}
	links := "ln -s a/b/c.txt inlnk && ln -s inlnk chain && ln -s a/b/new.txt dang && ln -s a/b dirlnk && " +
		"ln -s " + secret + " outabs && ln -s " + rel + " outrel && ln -s / root"
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": links}).json(t, &res)
	if res.ExitCode != 0 {
		t.Fatalf("ln: %+v", res)
	}
	return ws, secret
}

func TestFilesWriteThroughLinks(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ws, secret := filesLinkSetup(t, ts, "fl")
	const files = "/v1/sandboxes/fl/files"
	tests := []struct {
		name, path, target string // target: where the body lands, "" for a refusal
	}{
		{"link inside", "inlnk", "a/b/c.txt"},
		{"chain of links", "chain", "a/b/c.txt"},
		{"dangling link inside", "dang", "a/b/new.txt"},
		{"file under dir link", "dirlnk/d.txt", "a/b/d.txt"},
		{"absolute link out", "outabs", ""},
		{"relative link out", "outrel", ""},
		{"dir link to root", "root", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link, lerr := os.Readlink(filepath.Join(ws, tt.path))
			r := ts.do("PUT", files+"?path="+tt.path, tt.name)
			if tt.target == "" {
				if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
					t.Fatalf("status %d %s, want 400 invalid_argument", r.status, r.body)
				}
			} else {
				if r.status != http.StatusNoContent {
					t.Fatalf("status %d %s, want 204", r.status, r.body)
				}
				if r := ts.do("GET", files+"?path="+tt.target, nil); r.status != http.StatusOK || string(r.body) != tt.name {
					t.Fatalf("%s: status %d %q", tt.target, r.status, r.body)
				}
			}
			if got, err := os.Readlink(filepath.Join(ws, tt.path)); got != link || (err == nil) != (lerr == nil) {
				t.Fatalf("link now %q %v, was %q %v", got, err, link, lerr)
			}
		})
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "s3cret" {
		t.Fatalf("outside file: %q %v", b, err)
	}
}

func TestFilesWriteKeepsMode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("fm")
	const files = "/v1/sandboxes/fm/files"
	ts.must(http.StatusNoContent, "PUT", files+"?path=run.sh&mode=0755", "#!/bin/sh\necho one\n")
	ts.must(http.StatusNoContent, "PUT", files+"?path=run.sh", "#!/bin/sh\necho two\n")
	ts.must(http.StatusNoContent, "PUT", files+"?path=fresh", "x")
	ts.must(http.StatusNoContent, "PUT", files+"?path=set&mode=0755", "x")
	ts.must(http.StatusNoContent, "PUT", files+"?path=set&mode=0600", "y")
	ts.must(http.StatusNoContent, "PUT", files+"?path=none&mode=0", "z") // an explicit 0 is a mode too
	ts.must(http.StatusNoContent, "PUT", files+"?path=fresh2&mode=0600", "z")
	ts.must(http.StatusNoContent, "PUT", files+"?path=fresh2&mode=0000", "z")
	var dir struct{ Entries []dirEntryJSON }
	ts.must(http.StatusOK, "GET", files, nil).json(t, &dir)
	modes := map[string]string{}
	for _, e := range dir.Entries {
		modes[e.Name] = e.Mode
	}
	if want := map[string]string{"run.sh": "0755", "fresh": "0644", "set": "0600", "none": "0000", "fresh2": "0000"}; !maps.Equal(modes, want) {
		t.Fatalf("modes %v, want %v", modes, want)
	}
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/fm/exec", map[string]any{"command": "./run.sh"}).json(t, &res)
	if res.ExitCode != 0 || res.Stdout != "two\n" {
		t.Fatalf("run.sh after overwrite: %+v", res)
	}
}

func TestFilesWriteTrailingSlash(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("fs")
	const files = "/v1/sandboxes/fs/files"
	ts.must(http.StatusNoContent, "POST", files+"/mkdir", map[string]any{"path": "sub"})
	for _, p := range []string{"sub2/", "sub/", "x/y/", "sub2/."} {
		r := ts.do("PUT", files+"?path="+p, "x")
		if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(r.body), "names a directory") {
			t.Errorf("PUT %q: status %d %s, want 400 invalid_argument naming a directory", p, r.status, r.body)
		}
	}
	for _, p := range []string{"sub2", "x"} {
		if r := ts.do("GET", files+"?path="+p, nil); r.status != http.StatusNotFound {
			t.Errorf("GET %q after refused PUT: status %d %s", p, r.status, r.body)
		}
	}
}

func TestFilesThroughLinks(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ws, secret := filesLinkSetup(t, ts, "fg")
	const files = "/v1/sandboxes/fg/files"
	// GET follows links inside, as cat and ls do.
	if r := ts.must(http.StatusOK, "GET", files+"?path=chain", nil); string(r.body) != "old" {
		t.Fatalf("GET chain = %q", r.body)
	}
	var dir struct{ Entries []dirEntryJSON }
	ts.must(http.StatusOK, "GET", files+"?path=dirlnk", nil).json(t, &dir)
	if len(dir.Entries) != 1 || dir.Entries[0].Name != "c.txt" {
		t.Fatalf("GET dirlnk = %+v", dir)
	}
	// mkdir -p of a link to a directory is fine; under it, the directory is made in the target.
	ts.must(http.StatusNoContent, "POST", files+"/mkdir", map[string]any{"path": "dirlnk", "parents": true})
	ts.must(http.StatusNoContent, "POST", files+"/mkdir", map[string]any{"path": "dirlnk/e/f", "parents": true})
	if fi, err := os.Lstat(filepath.Join(ws, "a/b/e/f")); err != nil || !fi.IsDir() {
		t.Fatalf("a/b/e/f: %v", err)
	}
	// Whatever resolves outside is 400, whichever operation meets it.
	for _, tt := range []struct {
		method, path string
		body         any
	}{
		{"GET", files + "?path=outabs", nil},
		{"GET", files + "?path=outrel", nil},
		{"GET", files + "?path=root/etc", nil},
		{"DELETE", files + "?path=root/tmp", nil},
		{"POST", files + "/mkdir", map[string]any{"path": "root", "parents": true}},
		{"POST", files + "/mkdir", map[string]any{"path": "root/sandgate-escape", "parents": true}},
		{"POST", files + "/mkdir", map[string]any{"path": "outrel/x", "parents": true}},
	} {
		if r := ts.do(tt.method, tt.path, tt.body); r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Errorf("%s %s %v: status %d %s, want 400 invalid_argument", tt.method, tt.path, tt.body, r.status, r.body)
		}
	}
	// DELETE of a link removes the link, as rm does, and leaves its target.
	ts.must(http.StatusNoContent, "DELETE", files+"?path=inlnk", nil)
	ts.must(http.StatusNoContent, "DELETE", files+"?path=outabs", nil)
	if _, err := os.Lstat(filepath.Join(ws, "inlnk")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("inlnk after DELETE: %v", err)
	}
	if r := ts.must(http.StatusOK, "GET", files+"?path=a/b/c.txt", nil); string(r.body) != "old" {
		t.Fatalf("target after DELETE of its link = %q", r.body)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "s3cret" {
		t.Fatalf("outside file: %q %v", b, err)
	}
}

// TestFilesLongNames: names of 229-255 bytes are written and read (the temporary file
// beside them used to overflow NAME_MAX: a 500), and a 256-byte element is 400 naming
// the limit, on every file route.
func TestFilesLongNames(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ln")
	files := "/v1/sandboxes/ln/files"
	for _, n := range []int{229, 240, 255} {
		name := strings.Repeat("n", n)
		ts.must(http.StatusNoContent, "PUT", files+"?path=d/"+name, "long")
		if r := ts.must(http.StatusOK, "GET", files+"?path=d/"+name, nil); string(r.body) != "long" {
			t.Fatalf("read back %d-byte name: %q", n, r.body)
		}
	}
	long := strings.Repeat("n", 256)
	tests := []struct {
		name, method, path string
		body               any
	}{
		{"write", "PUT", files + "?path=" + long, "x"},
		{"write under", "PUT", files + "?path=" + long + "/x", "x"},
		{"read", "GET", files + "?path=d/" + long, nil},
		{"delete", "DELETE", files + "?path=" + long, nil},
		{"mkdir", "POST", files + "/mkdir", map[string]any{"path": "a/" + long, "parents": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(r.body), "255") {
				t.Fatalf("status %d %s, want 400 invalid_argument naming 255", r.status, r.body)
			}
		})
	}
}

// TestFilesModeBits: mode is octal within 0777; setuid, setgid and sticky bits are 400
// naming mode (before, 4777 answered 204 and silently dropped setuid).
func TestFilesModeBits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("mb")
	files := "/v1/sandboxes/mb/files?path=f&mode="
	for _, mode := range []string{"4777", "2755", "1777", "04755", "7777"} {
		t.Run(mode, func(t *testing.T) {
			r := ts.do("PUT", files+mode, "x")
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(r.body), "mode") {
				t.Fatalf("status %d %s, want 400 naming mode", r.status, r.body)
			}
		})
	}
	ts.must(http.StatusNoContent, "PUT", files+"0777", "x")
	var dir struct{ Entries []dirEntryJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/mb/files", nil).json(t, &dir)
	if len(dir.Entries) != 1 || dir.Entries[0].Mode != "0777" {
		t.Fatalf("listing %+v, want f with 0777", dir.Entries)
	}
}

// TestFilesStaleTempsRemovedAfterRestart: temporary files that a killed PUT left (a
// real leftover name of the older form, and one of the current form from another
// process) are removed on the first file request after the server starts again, and
// nothing else is. While a server runs it removes them once, not on every request.
func TestFilesStaleTempsRemovedAfterRestart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	onData := func(c *Config) { c.DataDir = data }
	first := newTestServer(t, &serverOptions{config: onData})
	first.sandbox("st")
	files := "/v1/sandboxes/st/files"
	first.must(http.StatusNoContent, "PUT", files+"?path=sub/keep.txt", "kept")
	leftovers := []string{"sub/.keep.txt.sandgate-0123456789ab.tmp", ".sandgate-0badc0de-0123456789ab.tmp"}
	var res execJSON
	first.must(http.StatusOK, "POST", "/v1/sandboxes/st/exec", map[string]any{
		"command": "echo partial > " + leftovers[0] + " && echo partial > " + leftovers[1] + " && echo x > .sandgate-notes.tmp",
	}).json(t, &res)
	if res.ExitCode != 0 {
		t.Fatalf("making leftovers: %+v", res)
	}
	// This server swept when its first file request came: the files made since stay.
	for _, p := range leftovers {
		first.must(http.StatusOK, "GET", files+"?path="+p, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	second := newTestServer(t, &serverOptions{config: onData})
	for _, p := range leftovers {
		if r := second.do("GET", files+"?path="+p, nil); r.status != http.StatusNotFound {
			t.Fatalf("leftover %s after restart: status %d %s, want 404", p, r.status, r.body)
		}
	}
	for p, want := range map[string]string{"sub/keep.txt": "kept", ".sandgate-notes.tmp": "x\n"} {
		if r := second.must(http.StatusOK, "GET", files+"?path="+p, nil); string(r.body) != want {
			t.Fatalf("%s after restart: %q", p, r.body)
		}
	}
}

// TestFilesAbsoluteLinkInside: a symlink whose absolute target is inside the workspace
// as the sandbox's processes see it works on every file route, as it does in the
// sandbox; an absolute one outside stays 400; a path under a regular file is 404.
func TestFilesAbsoluteLinkInside(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("fl")
	const files = "/v1/sandboxes/fl/files"
	ws := ts.guestWorkspace("fl")
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/fl/exec", map[string]any{"command": "echo hi > q.txt && mkdir -p a/b && " +
		"ln -s " + ws + "/q.txt absq && ln -s " + ws + "/a/b absdir && ln -s /etc/hostname absout && cat absq"}).json(t, &res)
	if res.ExitCode != 0 || res.Stdout != "hi\n" {
		t.Fatalf("set-up: %+v", res)
	}
	if r := ts.must(http.StatusOK, "GET", files+"?path=absq", nil); string(r.body) != "hi\n" {
		t.Fatalf("GET through an absolute link: %q", r.body)
	}
	ts.must(http.StatusNoContent, "PUT", files+"?path=absdir/new.txt", "new")
	ts.must(http.StatusNoContent, "POST", files+"/mkdir", map[string]any{"path": "absdir/sub", "parents": true})
	var dir struct{ Entries []dirEntryJSON }
	ts.must(http.StatusOK, "GET", files+"?path=absdir", nil).json(t, &dir)
	if len(dir.Entries) != 2 || dir.Entries[0].Name != "new.txt" || dir.Entries[1].Name != "sub" {
		t.Fatalf("listing through an absolute link: %+v", dir.Entries)
	}
	ts.must(http.StatusNoContent, "DELETE", files+"?path=absdir/new.txt", nil)
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/fl/exec", map[string]any{"command": "ls a/b"}).json(t, &res)
	if res.Stdout != "sub\n" {
		t.Fatalf("a/b after the writes through the link: %q", res.Stdout)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := ts.do(m, files+"?path=absout", nil); m == "GET" && (r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument) {
			t.Fatalf("GET through a link out: %d %s", r.status, r.body)
		}
		if r := ts.do(m, files+"?path=q.txt/x", nil); r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
			t.Fatalf("%s under a file: %d %s", m, r.status, r.body)
		}
	}
}
