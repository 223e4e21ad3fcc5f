package actor

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runtime"
)

// TestWorkspacePassivated: a passivated sandbox's files are reachable without starting
// anything: the activation that serves them has no runtime, and the sandbox keeps its
// state.
func TestWorkspacePassivated(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "wp")
	w, err := n.Workspace(ctx, "wp")
	must(t, err)
	must(t, w.WriteFile("notes.txt", strings.NewReader("kept"), nil))
	must(t, w.Close())
	passivateAll(t, n)

	w, err = n.Workspace(ctx, "wp")
	must(t, err)
	defer w.Close()
	f, _, err := w.Open("notes.txt")
	must(t, err)
	b, err := io.ReadAll(f)
	f.Close()
	must(t, err)
	if string(b) != "kept" {
		t.Fatalf("read %q", b)
	}
	started, err := call(ctx, n.Node, "wp", func(a *sbActor) (bool, error) { return a.sb.rt != nil, nil })
	must(t, err)
	if started {
		t.Fatal("file access started the sandbox's runtime")
	}
	if got := eventTypes(t, n, "wp"); len(got) != 1 || got[0] != "sandbox.created" {
		t.Fatalf("events %v", got)
	}
}

// TestWorkspaceSwappedForSymlink: a workspace directory replaced by a symlink is
// refused (runtime.ErrInvalid) rather than followed, and is not replaced by a fresh
// directory either.
func TestWorkspaceSwappedForSymlink(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "ws")
	outside := t.TempDir()
	dir := n.workspaceDir("ws")
	must(t, os.Rename(dir, dir+".moved"))
	must(t, os.Symlink(outside, dir))
	_, err := n.Workspace(tctx(t), "ws")
	if !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("Workspace through a symlink: %v, want runtime.ErrInvalid", err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("files made outside: %v", ents)
	}
	must(t, os.Remove(dir))
	// A workspace removed altogether is made again.
	w, err := n.Workspace(tctx(t), "ws")
	must(t, err)
	must(t, w.Close())
	if fi, err := os.Lstat(filepath.Clean(dir)); err != nil || !fi.IsDir() {
		t.Fatalf("workspace not made again: %v %v", fi, err)
	}
}
