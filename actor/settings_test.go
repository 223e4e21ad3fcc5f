package actor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestCreateSandboxEffectiveSettings re-creates a sandbox with its settings spelt
// differently: the same effective settings are the same sandbox, not a conflict.
func TestCreateSandboxEffectiveSettings(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	for _, spec := range []SandboxSpec{{ID: "plain"}, {ID: "sub", Cwd: "a/b"}} {
		_, created, err := n.CreateSandbox(ctx, spec)
		must(t, err)
		if !created {
			t.Fatalf("%s existed", spec.ID)
		}
	}
	ws := n.workspaceDir("sub")
	tests := []struct {
		name string
		spec SandboxSpec
		err  error
	}{
		{name: "cwd dot", spec: SandboxSpec{ID: "plain", Cwd: "."}},
		{name: "cwd dot slash", spec: SandboxSpec{ID: "plain", Cwd: "./"}},
		{name: "empty maps", spec: SandboxSpec{ID: "plain", Labels: map[string]string{}, Env: map[string]string{}, Pool: map[string]string{}}},
		{name: "cwd trailing slash", spec: SandboxSpec{ID: "sub", Cwd: "a/b/"}},
		{name: "cwd dotted", spec: SandboxSpec{ID: "sub", Cwd: "./a/./b"}},
		{name: "cwd absolute inside", spec: SandboxSpec{ID: "sub", Cwd: filepath.Join(ws, "a", "b")}},
		{name: "other cwd", spec: SandboxSpec{ID: "sub", Cwd: "a"}, err: ErrConflict},
		{name: "cwd given where none was", spec: SandboxSpec{ID: "plain", Cwd: "a"}, err: ErrConflict},
		{name: "env differs", spec: SandboxSpec{ID: "plain", Env: map[string]string{"A": ""}}, err: ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := tctx(t) // the subtest's own: it may wait for a parallel slot longer than the parent's lives
			_, created, err := n.CreateSandbox(ctx, tc.spec)
			if tc.err != nil {
				wantErr(t, err, tc.err)
				return
			}
			must(t, err)
			if created {
				t.Fatal("created a second time")
			}
		})
	}
}

// TestCreateSessionEffectiveSettings re-creates a live session with its settings spelt
// differently, on a sandbox with and without a cwd and env of its own.
func TestCreateSessionEffectiveSettings(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "plain"})
	must(t, err)
	_, _, err = n.CreateSandbox(ctx, SandboxSpec{ID: "sub", Cwd: "a/b", Env: map[string]string{"A": "1"}})
	must(t, err)
	for _, sb := range []string{"plain", "sub"} {
		for _, id := range []string{"n1", "n2"} {
			_, created, err := n.CreateSession(ctx, sb, SessionSpec{ID: id})
			must(t, err)
			if !created {
				t.Fatalf("%s/%s existed", sb, id)
			}
		}
		_, err := n.Exec(ctx, sb, runtime.ExecOptions{Command: "mkdir -p c", Cwd: "."})
		must(t, err)
		_, _, err = n.CreateSession(ctx, sb, SessionSpec{ID: "t1", Timeout: 5 * time.Second, Cwd: "c/"})
		must(t, err)
	}
	max := DefaultBudget().MaxExecTimeout
	tests := []struct {
		name     string
		sb       string
		spec     SessionSpec
		conflict bool
	}{
		{name: "shell bash", sb: "plain", spec: SessionSpec{ID: "n1", Shell: "bash"}},
		{name: "cwd dot", sb: "plain", spec: SessionSpec{ID: "n1", Cwd: "."}},
		{name: "cwd dot slash", sb: "plain", spec: SessionSpec{ID: "n2", Cwd: "./"}},
		{name: "empty env", sb: "plain", spec: SessionSpec{ID: "n1", Env: map[string]string{}}},
		{name: "timeout at the maximum", sb: "plain", spec: SessionSpec{ID: "n1", Timeout: max}},
		{name: "timeout over the maximum", sb: "plain", spec: SessionSpec{ID: "n1", Timeout: 2 * max}},
		{name: "same timeout and cwd", sb: "plain", spec: SessionSpec{ID: "t1", Timeout: 5 * time.Second, Cwd: "./c"}},
		{name: "sandbox cwd spelt out", sb: "sub", spec: SessionSpec{ID: "n1", Cwd: "a/b/"}},
		{name: "sandbox env spelt out", sb: "sub", spec: SessionSpec{ID: "n2", Env: map[string]string{"A": "1"}}},
		{name: "other timeout", sb: "plain", spec: SessionSpec{ID: "n1", Timeout: time.Second}, conflict: true},
		{name: "default timeout for a set one", sb: "plain", spec: SessionSpec{ID: "t1", Cwd: "c"}, conflict: true},
		{name: "other cwd", sb: "plain", spec: SessionSpec{ID: "n1", Cwd: "c"}, conflict: true},
		{name: "workspace for the sandbox cwd", sb: "sub", spec: SessionSpec{ID: "n1", Cwd: "."}, conflict: true},
		{name: "env overrides the sandbox", sb: "sub", spec: SessionSpec{ID: "n1", Env: map[string]string{"A": "2"}}, conflict: true},
		{name: "other shell", sb: "plain", spec: SessionSpec{ID: "n1", Shell: "sh"}, conflict: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, created, err := n.CreateSession(ctx, tc.sb, tc.spec)
			if tc.conflict {
				wantErr(t, err, ErrConflict)
				return
			}
			must(t, err)
			if created {
				t.Fatal("created a second time")
			}
		})
	}
}
