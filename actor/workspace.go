package actor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/runtime"
)

// Workspace opens the sandbox's workspace for file access (the gateway's file routes).
// The caller owns the result and must Close it. It is safe for concurrent use, stays
// usable while the sandbox hibernates or passivates, and fails (fs.ErrNotExist) once the
// sandbox is deleted. It does not wake a hibernated sandbox, but counts as activity.
//
// The workspace is opened through an os.Root of the node's workspaces directory
// (runtime.OpenWorkspaceIn): a workspace directory that a process replaced with a
// symlink is refused with an error matching runtime.ErrInvalid, and nothing it points
// to is touched.
func (n *Node) Workspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	_, err := call(ctx, n, sb, func(a *sbActor) (struct{}, error) {
		if err := a.exists(); err != nil {
			return struct{}{}, err
		}
		a.touch()
		if err := a.mountDisk(); err != nil {
			return struct{}{}, err
		}
		// Recreate it if it went missing (a process removed it): the API promises a
		// workspace for every sandbox. Mkdir does not follow a symlink in its place.
		if err := os.MkdirAll(n.workspacesDir(), 0o755); err != nil {
			return struct{}{}, fmt.Errorf("actor: failed to create workspace: %w", err)
		}
		if err := os.Mkdir(a.n.workspaceDir(a.id), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return struct{}{}, fmt.Errorf("actor: failed to create workspace: %w", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	w, err := runtime.OpenWorkspaceIn(n.workspacesDir(), sb)
	if err != nil {
		return nil, fmt.Errorf("actor: %w", err) // runtime's error says "failed to open workspace"
	}
	return w, nil
}

// workspacesDir is the directory holding every sandbox's workspace directory.
func (n *Node) workspacesDir() string { return filepath.Join(n.cfg.DataDir, "workspaces") }
