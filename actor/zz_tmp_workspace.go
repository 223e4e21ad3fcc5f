package actor

import (
	"context"

	"github.com/sandgate/sandgate/runtime"
)

func (n *Node) Workspace(ctx context.Context, sb string) (*runtime.Workspace, error) {
	if _, err := n.GetSandbox(ctx, sb); err != nil {
		return nil, err
	}
	return runtime.OpenWorkspace(n.workspaceDir(sb))
}
