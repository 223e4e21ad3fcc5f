package gateway

import "context"

// settleExit returns once the actor has committed the exit of process id of sandbox sb,
// so a stream's exit frame is never ahead of GET /events (docs/design.md, "Actors and
// the output gate"). The runtime publishes an exit before the actor's watcher records
// it; reading the process in a turn records it there, and the answer waits for the
// commit. An error is left to the stream: a sandbox deleted, hibernated or shutting
// down meanwhile recorded the exit itself.
func (s *Server) settleExit(ctx context.Context, sb, id string) {
	_, _ = s.node.ProcessInfo(ctx, sb, id)
}
