package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/cluster"
)

// Copies of workspaces this node no longer owns (docs/design.md, "Leftover
// workspaces"). Workspaces are node-local, so after a move the old owner still holds
// what the sandbox wrote there. That copy is removed:
//
//  1. after a planned move, by the old owner, for each sandbox whose workspace the new
//     owner answered it installed, once the handoff completed in this node's table
//     (dropDelivered). Until then the handoff can be aborted (its target died) and
//     give the partition back, and the copy is then the sandbox's workspace again.
//  2. at start, for every sandbox this node neither owns nor is receiving
//     (sweepWorkspaces): what a crash or an aborted stream left behind.
//  3. by the actor itself, when a sandbox arrives here from another node without its
//     workspace having come by a stream (actor.Config.SharedWorkspaces): the one case
//     where a leftover would otherwise be served as current.
//
// None of this runs when the nodes share their workspaces directory (a negative
// Config.WorkspaceMoveMax), where there is only one copy.

// sweepMax bounds how many leftover workspaces one start removes: a node that held
// many more removes the rest at its next start, and its first minutes go to serving.
const sweepMax = 10000

// dropDelivered waits until h completed or was aborted for every sandbox of sent,
// whose workspaces the new owner installed, and removes this node's copy of each
// that the table no longer gives to this node. It returns when ctx is done or after
// moveTimeout, keeping what it did not see completed.
func (s *Server) dropDelivered(ctx context.Context, h cluster.Handoff, sent []string) {
	if len(sent) == 0 {
		return
	}
	self := s.cluster.ID()
	deadline := time.NewTimer(moveTimeout)
	defer deadline.Stop()
	for {
		changed := s.cluster.TableChanged()
		pending := false
		for _, sb := range sent {
			if p := s.cluster.Placement(sb); p.State == cluster.PartitionHandoff && p.Owner == self && p.Epoch == h.Epoch {
				pending = true
				break
			}
		}
		if !pending {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-deadline.C:
			s.log.Warn("a planned move did not complete in time: this node keeps the workspaces it sent", "to", h.To, "sandboxes", len(sent))
			return
		}
	}
	dropped := 0
	for _, sb := range sent {
		if !s.notMine(sb) {
			continue // aborted, or back here: the copy is the sandbox's workspace
		}
		if err := s.node.DropWorkspace(ctx, sb); err != nil {
			s.log.Warn("failed to remove the workspace a planned move delivered elsewhere", "sandbox", sb, "err", err)
			continue
		}
		dropped++
	}
	s.log.Info("removed the workspaces a completed planned move delivered", "to", h.To, "removed", dropped, "sent", len(sent))
}

// notMine reports whether the table gives sb to another node, neither in a handoff to
// this node nor arriving here.
func (s *Server) notMine(sb string) bool {
	self := s.cluster.ID()
	p := s.cluster.Placement(sb)
	if p.Owner == "" || p.Owner == self || (p.State == cluster.PartitionHandoff && p.Next == self) {
		return false
	}
	return !s.handoffs.isArriving(sb)
}

// sweepWorkspaces removes, at start, the workspaces of sandboxes this node does not
// own and is not receiving, up to sweepMax, once its table has caught up with the
// log, and logs what it did.
func (s *Server) sweepWorkspaces(ctx context.Context) {
	// A table that lags the log (a restart replays it while the leader's commits
	// arrive) could give away a sandbox a later entry gives back here: catch up first.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err := s.cluster.ReadBarrier(cctx) // a write only where no read index can be had
	cancel()
	if err != nil {
		s.log.Warn("leftover workspaces not swept: this node's table did not catch up", "err", err)
		return
	}
	ids, err := s.node.Workspaces()
	if err != nil {
		s.log.Warn("failed to list workspaces to sweep", "err", err)
		return
	}
	removed, failed := 0, 0
	for _, sb := range ids {
		if ctx.Err() != nil || removed >= sweepMax {
			break
		}
		if !s.notMine(sb) {
			continue
		}
		switch err := s.node.DropWorkspace(ctx, sb); {
		case err == nil:
			removed++
		case errors.Is(err, actor.ErrUnavailable): // active here after all: it stays
		default:
			failed++
			s.log.Warn("failed to remove a leftover workspace", "sandbox", sb, "err", err)
		}
	}
	if removed > 0 || failed > 0 {
		s.log.Info("removed the workspaces of sandboxes other nodes own", "removed", removed, "failed", failed, "held", len(ids))
	}
}
