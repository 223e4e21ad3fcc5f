package runtime

import (
	"context"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/nsinit"
)

// TestWorkspaceUserNS checks the files API against a sandbox whose processes run as
// root of a user namespace (host uid 100000), with the workspace idmapped into it:
// what the API writes the sandbox can append to, and what the sandbox makes the API
// reads, overwrites and deletes, modes kept both ways.
func TestWorkspaceUserNS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	w, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteFile("api/put.txt", strings.NewReader("put\n"), ptr(fs.FileMode(0o640))); err != nil {
		t.Fatal(err)
	}
	if err := w.Mkdir("api/made", true); err != nil {
		t.Fatal(err)
	}
	r := nsinit.DefaultIDRange
	in, err := nsinit.Start(ctx, nsinit.Config{ID: "sb-files", Workspace: dir, UserNS: &r})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := in.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	sh := func(script string) string {
		t.Helper()
		out, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		ch, err := in.Spawn(ctx, nsinit.SpawnRequest{Argv: []string{"sh", "-c", script}, Stdout: out, Stderr: out})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		st, err := ch.Wait(ctx)
		b, _ := os.ReadFile(out.Name())
		if err != nil || st.Code != 0 {
			t.Fatalf("%q inside: %v, %v: %s", script, st, err, b)
		}
		return string(b)
	}
	// API → sandbox: the file is appendable, the directory writable, the mode the API's.
	if got := sh(`id -u && stat -c '%a' api/put.txt && echo more >> api/put.txt && echo x > api/made/x`); got != "0\n640\n" {
		t.Fatalf("inside said %q", got)
	}
	wantAPIFile(t, w, "api/put.txt", "put\nmore\n", 0o640)
	wantAPIFile(t, w, "api/made/x", "x\n", 0o644)
	// Sandbox → API: readable, overwritable and deletable, with the mode made inside.
	sh(`mkdir -p in/sub && echo inside > in/sub/f && chmod 600 in/sub/f`)
	wantAPIFile(t, w, "in/sub/f", "inside\n", 0o600)
	if err := w.WriteFile("in/sub/f", strings.NewReader("api\n"), ptr(fs.FileMode(0o604))); err != nil {
		t.Fatalf("overwrite a file made inside: %v", err)
	}
	if got := sh(`cat in/sub/f && stat -c '%a' in/sub/f && echo again >> in/sub/f`); got != "api\n604\n" {
		t.Fatalf("inside said %q", got)
	}
	wantAPIFile(t, w, "in/sub/f", "api\nagain\n", 0o604)
	if err := w.Remove("in", true); err != nil {
		t.Fatalf("delete what was made inside: %v", err)
	}
	if got := sh(`test -e in || echo gone`); got != "gone\n" {
		t.Fatalf("inside said %q", got)
	}
}

func wantAPIFile(t *testing.T, w *Workspace, path, data string, mode fs.FileMode) {
	t.Helper()
	f, fi, err := w.Open(path)
	if err != nil {
		t.Fatalf("Open %s: %v", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || string(b) != data || fi.Mode().Perm() != mode {
		t.Fatalf("%s: %q %v, mode %v; want %q %v", path, b, err, fi.Mode().Perm(), data, mode)
	}
}
