package actor

import (
	"context"
	"fmt"
	"os"

	"github.com/sandgate/sandgate/runtime"
)

// Workspace returns the sandbox's workspace for file access (the gateway's file
// routes). The handle belongs to the sandbox's activation: do not Close it. It is
// safe for concurrent use and stays valid while the sandbox hibernates; it is closed
// when the sandbox is deleted, when the activation passivates (PassivateAfter after
// its last request) and when the node closes, so use it within one request and ask
// again for the next. It does not wake a hibernated sandbox, but counts as activity.
func (n *Node) Workspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	return call(ctx, n, sb, func(a *sbActor) (*runtime.Workspace, error) {
		if err := a.exists(); err != nil {
			return nil, err
		}
		a.touch()
		if a.sb.ws != nil {
			return a.sb.ws, nil
		}
		dir := a.n.workspaceDir(a.id)
		// Recreate it if it went missing (a process removed it): the API promises a
		// workspace for every sandbox.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("actor: failed to create workspace: %w", err)
		}
		w, err := runtime.OpenWorkspace(dir)
		if err != nil {
			return nil, fmt.Errorf("actor: failed to open workspace: %w", err)
		}
		a.sb.ws = w
		return w, nil
	})
}

// closeWorkspace closes the activation's workspace handle, if any.
func (a *sbActor) closeWorkspace() {
	if a.sb.ws != nil {
		_ = a.sb.ws.Close()
		a.sb.ws = nil
	}
}
