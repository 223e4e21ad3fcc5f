package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// Join adds a member; it must run on the leader, and returns a *NotLeaderError naming
// the leader otherwise, so the caller (the gateway's join route) can forward it.
//
//  1. A raft server with the same id at another address, or another id at the same
//     address, is removed first (a node that came back with a new address).
//  2. The node is added as a non-voter, so it catches up without counting for quorum.
//  3. The member is registered alive in the member table.
//  4. The reconcile loop then promotes it to voter while voters are fewer than the
//     target (3, or 5 past ten members) and moves partitions to it at RebalanceRate.
//
// Joining a member that is already in with the same address only re-registers it.
func (n *Node) Join(ctx context.Context, m Member) error {
	if err := n.join(ctx, m); err != nil {
		return fmt.Errorf("failed to join %s: %w", m.ID, err)
	}
	return nil
}

func (n *Node) join(ctx context.Context, m Member) error {
	if m.ID == "" || m.RaftAddr == "" {
		return fmt.Errorf("%w: member needs an id and a raft address", ErrInvalid)
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	if err := n.checkNotLive(m); err != nil {
		return err
	}
	f := n.raft.GetConfiguration()
	if err := n.wait(ctx, f); err != nil {
		return err
	}
	id, addr := raft.ServerID(m.ID), raft.ServerAddress(m.RaftAddr)
	present := false
	for _, srv := range f.Configuration().Servers {
		switch {
		case srv.ID == id && srv.Address == addr:
			present = true
		case srv.ID == id || srv.Address == addr:
			if srv.ID == raft.ServerID(n.cfg.NodeID) {
				return fmt.Errorf("%w: %s or %s is the leader itself", ErrInvalid, m.ID, m.RaftAddr)
			}
			if err := n.wait(ctx, n.raft.RemoveServer(srv.ID, 0, enqueueTimeout(ctx))); err != nil {
				return err
			}
		}
	}
	if !present {
		if err := n.wait(ctx, n.raft.AddNonvoter(id, addr, 0, enqueueTimeout(ctx))); err != nil {
			return err
		}
	}
	n.live.touch(m.ID, n.now()) // a fresh member has not had time to heartbeat
	if err := n.apply(ctx, encodeRegister(m)); err != nil {
		return err
	}
	n.kickLeader()
	return nil
}

// checkNotLive refuses a join that would replace a live member: another incarnation
// under m's id at other addresses, or another member at m's raft address, that still
// heartbeats (its lease may not have run out). A node that restarts at a new address
// is taken once its old self has been silent for the lease.
func (n *Node) checkNotLive(m Member) error {
	for _, cur := range n.fsm.cur.Load().members {
		if cur.Status == StatusLeft || cur.Status == StatusDown || n.movable(cur.ID) {
			continue
		}
		same := cur.ID == m.ID
		if same && (cur.RaftAddr != m.RaftAddr || cur.HTTPAddr != m.HTTPAddr) || !same && cur.RaftAddr == m.RaftAddr {
			return fmt.Errorf("%w: member %s is alive at raft %s, HTTP %s: stop it or remove it first", ErrMemberAlive, cur.ID, cur.RaftAddr, cur.HTTPAddr)
		}
	}
	return nil
}

// Remove takes a member out of the cluster; it must run on the leader (see Join). The
// member is marked left, it is refused heartbeats from then on, the reconcile loop
// moves its partitions to the others once its lease has run out (L + δ after its last
// heartbeat), and it is removed from the raft configuration. Removing the leader itself
// makes it step down once the change commits; the next leader moves its partitions.
// The removed node's process is not stopped: that is its operator's business.
func (n *Node) Remove(ctx context.Context, id NodeID) error {
	if err := n.remove(ctx, id); err != nil {
		return fmt.Errorf("failed to remove %s: %w", id, err)
	}
	return nil
}

func (n *Node) remove(ctx context.Context, id NodeID) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	servers, err := n.RaftServers()
	if err != nil {
		return err
	}
	voters := 0
	for _, v := range servers {
		if v {
			voters++
		}
	}
	if servers[id] && voters == 1 {
		return ErrLastVoter
	}
	_, known := n.fsm.cur.Load().members[id]
	if known {
		if err := n.apply(ctx, encodeSetStatus(id, StatusLeft)); err != nil {
			return err
		}
		n.kickLeader()
	}
	f := n.raft.GetConfiguration()
	if err := n.wait(ctx, f); err != nil {
		return err
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID == raft.ServerID(id) {
			return n.wait(ctx, n.raft.RemoveServer(srv.ID, 0, enqueueTimeout(ctx)))
		}
	}
	if !known {
		return fmt.Errorf("%w: %s", ErrUnknownMember, id)
	}
	return nil
}

// Pin places a sandbox on an alive member whose labels match every label of sel (the
// pool a policy returned at create), overriding its partition's owner; it must run on
// the leader. Among matching members the choice is rendezvous-hashed on the sandbox id.
// When the pinned member leaves, the leader moves the pin to another matching member,
// or leaves it unassigned (Owner reports ok false) until one appears. No match now
// is ErrNoMatchingMember.
func (n *Node) Pin(ctx context.Context, sandboxID string, sel map[string]string) (Assignment, error) {
	a, err := n.pinSandbox(ctx, sandboxID, sel)
	if err != nil {
		return Assignment{}, fmt.Errorf("failed to pin %s: %w", sandboxID, err)
	}
	return a, nil
}

func (n *Node) pinSandbox(ctx context.Context, sandboxID string, sel map[string]string) (Assignment, error) {
	// The member picked may go down between the pick and the apply, and the state
	// machine then refuses the pin (ErrUnknownMember): pick again among the members
	// alive now, a bounded number of times.
	for attempt := 1; ; attempt++ {
		a, err := n.pinOnce(ctx, sandboxID, sel)
		if !errors.Is(err, ErrUnknownMember) || attempt == 3 {
			return a, err
		}
	}
}

// pinOnce picks a member for sandboxID and commits the pin.
func (n *Node) pinOnce(ctx context.Context, sandboxID string, sel map[string]string) (Assignment, error) {
	if !n.IsLeader() {
		return Assignment{}, n.notLeader()
	}
	s := n.fsm.cur.Load()
	owner := pickMember(matching(s, sel), sandboxID)
	if owner == "" {
		return Assignment{}, fmt.Errorf("%w: %v", ErrNoMatchingMember, sel)
	}
	cur := s.pins[sandboxID]
	if cur.State == PartitionActive && cur.Owner == owner {
		return cur.Assignment, nil
	}
	if err := n.apply(ctx, encodePin(sandboxID, sel, owner, cur.Epoch)); err != nil {
		return Assignment{}, err
	}
	return n.fsm.cur.Load().pins[sandboxID].Assignment, nil
}

// Unpin returns a sandbox to its partition's owner; it must run on the leader.
// Unpinning a sandbox that is not pinned does nothing.
func (n *Node) Unpin(ctx context.Context, sandboxID string) error {
	if !n.IsLeader() {
		return fmt.Errorf("failed to unpin %s: %w", sandboxID, n.notLeader())
	}
	p, ok := n.fsm.cur.Load().pins[sandboxID]
	if !ok {
		return nil
	}
	if err := n.apply(ctx, encodeUnpin(sandboxID, p.Epoch)); err != nil {
		return fmt.Errorf("failed to unpin %s: %w", sandboxID, err)
	}
	return nil
}
