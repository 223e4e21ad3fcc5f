package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesRefuseSwappedWorkspace: a command in a sandbox moves its own workspace
// directory away and puts a symlink in its place (to a directory outside, or to
// another sandbox's workspace). The files API then refuses the sandbox's files with
// 400 invalid_argument, reading and writing, and the directory the link points to is
// untouched. Once the directory is back, files are served again.
func TestFilesRefuseSwappedWorkspace(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	// The local driver: a sandbox on the namespace driver cannot reach the workspaces
	// directory to swap its workspace (TestIsolationWorkspaceSwap), but the files API must not
	// depend on that.
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.DataDir, c.Runtime = data, RuntimeLocal }})
	marker := t.TempDir()
	if err := os.WriteFile(filepath.Join(marker, "marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts.sandbox("sw")
	ts.sandbox("other")
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/other/files?path=secret", "other's")
	files := "/v1/sandboxes/sw/files"
	ts.must(http.StatusNoContent, "PUT", files+"?path=f", "mine")

	for _, target := range []string{marker, "other"} {
		t.Run(filepath.Base(target), func(t *testing.T) {
			var res execJSON
			ts.must(http.StatusOK, "POST", "/v1/sandboxes/sw/exec", map[string]any{
				"command": "cd .. && mv sw sw.moved && ln -s '" + target + "' sw",
			}).json(t, &res)
			if res.ExitCode != 0 {
				t.Fatalf("swapping the workspace: %+v", res)
			}
			for _, req := range []struct{ method, path, body string }{
				{"GET", files + "?path=marker", ""},
				{"GET", files + "?path=secret", ""},
				{"GET", files, ""},
				{"PUT", files + "?path=planted", "x"},
				{"PUT", files + "?path=marker", "overwritten"},
				{"DELETE", files + "?path=marker", ""},
			} {
				var body any
				if req.body != "" {
					body = req.body
				}
				r := ts.do(req.method, req.path, body)
				if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_argument" {
					t.Fatalf("%s %s through a swapped workspace: %d %s", req.method, req.path, r.status, r.body)
				}
			}
			if b, err := os.ReadFile(filepath.Join(marker, "marker")); err != nil || string(b) != "host" {
				t.Fatalf("marker: %q %v", b, err)
			}
			if ents, _ := os.ReadDir(marker); len(ents) != 1 {
				t.Fatalf("the marker directory changed: %v", ents)
			}
			ws := filepath.Join(data, "workspaces")
			if err := os.Remove(filepath.Join(ws, "sw")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(ws, "sw.moved"), filepath.Join(ws, "sw")); err != nil {
				t.Fatal(err)
			}
			if r := ts.must(http.StatusOK, "GET", files+"?path=f", nil); string(r.body) != "mine" {
				t.Fatalf("after the directory is back: %q", r.body)
			}
		})
	}
	if r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/other/files?path=secret", nil); string(r.body) != "other's" {
		t.Fatalf("other sandbox's file: %q", r.body)
	}
}
