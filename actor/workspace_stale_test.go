package actor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestStaleWorkspaceOnReturn moves a sandbox that wrote a file on a to b by a fence
// (its workspace stays on a), lets it write on b, and fences b so the sandbox comes
// back to a: a's old copy is removed before the activation (the file is gone and
// sandbox.moved names the workspace lost), unless the nodes share their workspaces
// directory (Config.SharedWorkspaces), when the copy is taken as current. A sandbox
// whose workspace arrived by a stream keeps it.
func TestStaleWorkspaceOnReturn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		shared   bool
		stream   bool // b's workspace streamed back to a
		wantFile string
		wantLost bool
	}{
		{name: "local", wantFile: "", wantLost: true},
		{name: "shared", shared: true, wantFile: "old\n", wantLost: false},
		{name: "streamed", stream: true, wantFile: "new\n", wantLost: false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openTestBolt(t)
			ownA, ownB := &ownership{}, &ownership{}
			ownB.deny.Store(true)
			name := "st" + string(rune('0'+i))
			edit := func(id string, own *ownership) func(c *Config) {
				return func(c *Config) {
					c.NodeID, c.Storage, c.SharedWorkspaces = name+id, st, tt.shared
					own.config(c)
				}
			}
			a, b := newTestNode(t, edit("-a", ownA)), newTestNode(t, edit("-b", ownB))
			ctx := tctx(t)
			mustCreate(t, a, "sb")
			_, err := a.Exec(ctx, "sb", runtime.ExecOptions{Command: "echo old > f"})
			must(t, err)
			a.Fence("lease expired")
			eventually(t, 30*time.Second, "a's activation gone", func() bool { return a.ActiveActors() == 0 })
			ownA.deny.Store(true)
			ownB.deny.Store(false)
			_, err = b.Exec(ctx, "sb", runtime.ExecOptions{Command: "echo new > f"})
			must(t, err)
			b.Fence("lease expired")
			eventually(t, 30*time.Second, "b's activation gone", func() bool { return b.ActiveActors() == 0 })
			if tt.stream {
				streamWorkspace(t, b.Node, a.Node, "sb")
			}
			ownB.deny.Store(true)
			ownA.deny.Store(false)
			res, err := a.Exec(ctx, "sb", runtime.ExecOptions{Command: "cat f 2>/dev/null; true"})
			must(t, err)
			if string(res.Stdout) != tt.wantFile {
				t.Fatalf("f on a after the return holds %q, want %q", res.Stdout, tt.wantFile)
			}
			moved := movedEvents(t, a, "sb")
			last := moved[len(moved)-1]
			lost, _ := last["lost"].([]any)
			if got := slices.Contains(lost, any("workspace")); got != tt.wantLost || last["to"] != a.Node.cfg.NodeID {
				t.Fatalf("sandbox.moved %v: workspace lost %v, want %v", last, got, tt.wantLost)
			}
			assertNoStale(t, a.Node)
		})
	}
}

// TestDropWorkspace removes the workspace of a sandbox that is not active here, and
// refuses one that is active or whose workspace is being imported; nothing to remove
// is no error.
func TestDropWorkspace(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "dw")
	_, err := n.Exec(ctx, "dw", runtime.ExecOptions{Command: "echo x > f"})
	must(t, err)
	if err := n.DropWorkspace(tctx(t), "dw"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("DropWorkspace of an active sandbox: %v, want ErrUnavailable", err)
	}
	must(t, n.Deactivate(ctx, "dw"))
	if !n.beginImport("dw") {
		t.Fatal("beginImport refused an inactive sandbox")
	}
	if err := n.DropWorkspace(tctx(t), "dw"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("DropWorkspace while importing: %v, want ErrUnavailable", err)
	}
	n.endImport("dw")
	must(t, n.DropWorkspace(tctx(t), "dw"))
	if _, err := os.Stat(n.workspaceDir("dw")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace after DropWorkspace: %v", err)
	}
	must(t, n.DropWorkspace(tctx(t), "dw"))
	if err := n.DropWorkspace(tctx(t), "../x"); err == nil {
		t.Fatal("DropWorkspace took an invalid id")
	}
	assertNoStale(t, n.Node)
}

// assertNoStale checks that n's workspaces and disks directories hold nothing set
// aside for removal.
func assertNoStale(t *testing.T, n *Node) {
	t.Helper()
	for _, d := range []string{n.workspacesDir(), n.disksDir()} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), stalePrefix) {
				t.Errorf("%s left", filepath.Join(d, e.Name()))
			}
		}
	}
}
