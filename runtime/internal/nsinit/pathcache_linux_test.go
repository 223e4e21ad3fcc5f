package nsinit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestPathCache: a search is remembered only when every directory it looked in is
// read-only (here marked so by hand: the host has no read-only mount to test on), and
// forget drops it.
func TestPathCache(t *testing.T) {
	t.Parallel()
	ro, rw := t.TempDir(), t.TempDir()
	for _, d := range []string{ro, rw} {
		if err := os.WriteFile(filepath.Join(d, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(ro, "missing")
	for _, tt := range []struct {
		name, path, want string
		cached           bool
	}{
		{"read-only", ro, filepath.Join(ro, "prog"), true},
		{"missing dir below read-only first", missing + ":" + ro, filepath.Join(ro, "prog"), true},
		{"writable", rw, filepath.Join(rw, "prog"), false},
		{"writable searched first", rw + "/none:" + ro, filepath.Join(ro, "prog"), false},
		{"relative entry", "rel:" + ro, filepath.Join(ro, "prog"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pc := &pathCache{ro: map[string]bool{ro: true, rw: false}}
			env := []string{"PATH=" + tt.path}
			for i, wantCached := range []bool{false, tt.cached} {
				got, cached, err := pc.lookPath("prog", env, rw)
				if err != nil || got != tt.want || cached != wantCached {
					t.Fatalf("lookup %d: %q, cached %v, %v; want %q, cached %v", i, got, cached, err, tt.want, wantCached)
				}
			}
			pc.forget("prog", env)
			if _, cached, _ := pc.lookPath("prog", env, rw); cached {
				t.Fatal("found in the cache after forget")
			}
		})
	}
	pc := &pathCache{}
	if pc.readOnly(rw) || pc.readOnly(filepath.Join(rw, "a", "b")) {
		t.Fatal("a temporary directory (or one below it) counted read-only")
	}
	if _, _, err := pc.lookPath("prog", []string{"PATH=" + missing}, rw); err == nil {
		t.Fatal("found a program in a missing directory")
	}
}

// TestPathCacheWorkspace: a program put in a writable PATH directory of the sandbox
// after a first search found another one later in the PATH is run from then on.
func TestPathCacheWorkspace(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	env := []string{"PATH=/workspace/bin:/usr/bin:/bin"}
	first := runReq(t, in, "", SpawnRequest{Argv: []string{"true"}, Env: env})
	if first.status.Code != 0 {
		t.Fatalf("true: %+v", first)
	}
	run(t, in, "", "/bin/sh", "-c", "mkdir -p /workspace/bin && printf '#!/bin/sh\\necho mine\\n' > /workspace/bin/true && chmod +x /workspace/bin/true")
	if r := runReq(t, in, "", SpawnRequest{Argv: []string{"true"}, Env: env}); strings.TrimSpace(r.stdout) != "mine" {
		t.Fatalf("after adding /workspace/bin/true: stdout %q, status %+v", r.stdout, r.status)
	}
}

// TestPathCacheCopiesKeys: the cache keeps its own copy of the name and PATH it was
// asked with, which the init's spawner passes as views of its receive buffer: the
// next request overwrites them.
func TestPathCacheCopiesKeys(t *testing.T) {
	t.Parallel()
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pc := &pathCache{ro: map[string]bool{ro: true}}
	buf := []byte("prog" + "PATH=" + ro)
	view := func(from, to int) string { return unsafe.String(&buf[from], to-from) }
	if _, cached, err := pc.lookPath(view(0, 4), []string{view(4, len(buf))}, "/"); err != nil || cached {
		t.Fatalf("first lookup: cached %v, %v", cached, err)
	}
	for i := range buf {
		buf[i] = 'x' // the next request
	}
	got, cached, err := pc.lookPath("prog", []string{"PATH=" + ro}, "/")
	if err != nil || !cached || got != filepath.Join(ro, "prog") {
		t.Fatalf("second lookup: %q, cached %v, %v; want the first one's answer from the cache", got, cached, err)
	}
}
