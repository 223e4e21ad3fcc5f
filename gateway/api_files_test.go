package gateway

import (
	"net/http"
	"strings"
	"testing"
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
