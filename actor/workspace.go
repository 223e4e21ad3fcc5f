package actor

import (
	"context"
	"fmt"
	"os"

	"github.com/sandgate/sandgate/runtime"
)

// Workspace opens the sandbox's workspace for file access (the gateway's file routes).
// The caller owns the result and must Close it. It is safe for concurrent use, stays
// usable while the sandbox hibernates or passivates, and fails (fs.ErrNotExist) once the
// sandbox is deleted. It does not wake a hibernated sandbox, but counts as activity.
func (n *Node) Workspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	dir, err := call(ctx, n, sb, func(a *sbActor) (string, error) {
		if err := a.exists(); err != nil {
			return "", err
		}
		a.touch()
		dir := a.n.workspaceDir(a.id)
		// Recreate it if it went missing (a process removed it): the API promises a
		// workspace for every sandbox.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("actor: failed to create workspace: %w", err)
		}
		return dir, nil
	})
	if err != nil {
		return nil, err
	}
	w, err := runtime.OpenWorkspace(dir)
	if err != nil {
		return nil, fmt.Errorf("actor: failed to open workspace: %w", err)
	}
	return w, nil
}
