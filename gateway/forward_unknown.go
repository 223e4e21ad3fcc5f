package gateway

import (
	"context"
	"time"
)

// Reading a sandbox created through another node. A follower learns that an entry
// committed only with the leader's next message, so for a moment after a create its
// table may lack the pin that placed the sandbox on a member of its pool, and the
// records the owner wrote under it. The node its partition names (this one) would
// then answer 404 for a sandbox that exists. So before a node serves a request for a
// sandbox its replica does not know, it catches up once with the leader (an empty
// write through the log, waited for here) and looks at the owner again: a read right
// after a create, through any node, finds the sandbox. A create is not checked: the
// cluster fences a create written under a table that lacked a newer pin.

// unknownHere reports whether this node, about to serve a request for sandbox sb
// (never a create), had to catch up because its replica did not know sb: the caller
// then looks at the owner again. It catches up once per request (*done, set here) and
// waits at most timeout; on a node alone in its cluster nothing can lag, and it
// returns false at once.
func (s *Server) unknownHere(ctx context.Context, sb string, timeout time.Duration, done *bool) bool {
	if sb == "" || *done {
		return false
	}
	*done = true
	if _, known := s.node.SandboxTenant(sb); known || s.alone() {
		return false
	}
	if s.cfg.onCatchUp != nil {
		s.cfg.onCatchUp(sb)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.cluster.CatchUp(ctx); err != nil {
		s.log.Debug("failed to catch up before serving an unknown sandbox", "sandbox", sb, "err", err)
		return false
	}
	return true
}
