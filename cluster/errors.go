package cluster

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Compare with errors.Is.
var (
	// ErrClosed is returned by calls on a Node after Close.
	ErrClosed = errors.New("cluster: node closed")
	// ErrInvalid reports a bad Config or argument.
	ErrInvalid = errors.New("cluster: invalid argument")
	// ErrAdvertise reports that a node has no address to tell other nodes: its
	// advertise address names no host (0.0.0.0, ::), or it listens on all interfaces
	// and the host has no non-loopback unicast address (AdvertiseAddr).
	ErrAdvertise = errors.New("cluster: no address to advertise")
	// ErrNotLeader is matched by every *NotLeaderError.
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrStaleEpoch is returned when an ownership change names an expected epoch that
	// is no longer the current one; the whole command is rejected.
	ErrStaleEpoch = errors.New("cluster: stale epoch")
	// ErrUnknownMember is returned when a command names a node that is not an alive
	// member.
	ErrUnknownMember = errors.New("cluster: unknown or not alive member")
	// ErrUnknownCommand is returned (and latched, see Node.Err) when the log holds a
	// command this version cannot apply and that is not marked ignorable.
	ErrUnknownCommand = errors.New("cluster: unknown command")
	// ErrNoMatchingMember is returned by Pin when no alive member carries the labels
	// of the selector.
	ErrNoMatchingMember = errors.New("cluster: no alive member matches the selector")
	// ErrPinInUse is returned by DropPin for a pin under which a sandbox record was
	// written: the sandbox exists (or existed) in its pool, so the pin stays.
	ErrPinInUse = errors.New("cluster: pinned sandbox has records")
	// ErrCorrupt reports a command or snapshot that cannot be decoded.
	ErrCorrupt = errors.New("cluster: corrupt encoding")
	// ErrNotOwner is matched by every *NotOwnerError: this node's table gives the
	// sandbox to another node, or to none. The gateway forwards to the owner.
	ErrNotOwner = errors.New("cluster: not the owner")
	// ErrLeaseExpired is returned by Admit when this node owns the sandbox in its
	// table but holds no valid lease: it may have been cut off and its partitions
	// given to others, so it must not run anything (503 and Retry-After).
	ErrLeaseExpired = errors.New("cluster: node lease expired")
	// ErrFenced is returned by Node.Write for a batch whose Epoch is not the current
	// epoch of its sandbox's partition (or of the sandbox's pin) when the batch's raft
	// entry is applied: another owner has taken over, or the writer never owned the
	// sandbox. Every replica rejects the batch alike and nothing of it is applied;
	// the other batches of the same entry are not affected.
	ErrFenced = errors.New("cluster: write fenced by the partition's current epoch")
	// ErrIndeterminate is matched by a Write error whose outcome is unknown: the batch
	// reached a leader that then lost leadership, shut down or stopped answering, so
	// it may or may not be applied. A caller may retry only a write that is safe to
	// apply twice; the actor does not retry (see the package doc, "Writes").
	ErrIndeterminate = errors.New("cluster: write outcome unknown")
	// ErrLastVoter is returned by Remove for the only voter of the cluster: removing
	// it would leave no quorum.
	ErrLastVoter = errors.New("cluster: cannot remove the last voter")
	// ErrMemberAlive is returned by Join for a member whose id, or raft address, is a
	// live member's at other addresses: adding it would take that member out of the
	// cluster. Once the live one is gone (its lease ran out) the join is taken.
	ErrMemberAlive = errors.New("cluster: a live member has that id or raft address")
	// ErrHandoff is returned by Admit for a sandbox whose partition is being handed
	// from one member to another: nobody may run it until the handoff completes, a
	// matter of a passivation and two commits, so the gateway holds the request and
	// checks again.
	ErrHandoff = errors.New("cluster: partition in handoff")
)

// Unexported sentinels of the raft log (wal.go).
var (
	// errWALOrder is returned by StoreLogs for entries whose indexes do not follow
	// the log's last one: the WAL holds consecutive indexes only.
	errWALOrder = errors.New("cluster: raft log entries out of order")
	// errRecord reports a record that is short, fails its CRC or does not decode:
	// the bytes of an append that a crash cut short, or damage.
	errRecord = errors.New("cluster: bad raft log record")
)

// NotOwnerError is returned by Node.Admit for a sandbox this node does not own. It
// names the owner in this node's table, which may be a little behind the leader's.
type NotOwnerError struct {
	// SandboxID is the sandbox asked about.
	SandboxID string
	// Owner is the owning node in the local table, empty when the sandbox has no owner
	// (a partition in failover, or a pin with no matching member).
	Owner NodeID
	// Epoch is the epoch of that assignment.
	Epoch uint64
}

// Error names the owner, if any.
func (e *NotOwnerError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("cluster: sandbox %s has no owner", e.SandboxID)
	}
	return fmt.Sprintf("cluster: sandbox %s is owned by %s (epoch %d)", e.SandboxID, e.Owner, e.Epoch)
}

// Is makes errors.Is(err, ErrNotOwner) true.
func (e *NotOwnerError) Is(target error) bool { return target == ErrNotOwner }

// OwnerOf returns the owner named by err when err is or wraps a *NotOwnerError.
func OwnerOf(err error) (owner *NotOwnerError, ok bool) {
	ok = errors.As(err, &owner)
	return owner, ok
}

// NotLeaderError is returned by leader-only calls (Join, Remove, Pin, Unpin) on a node
// that is not the raft leader. It names the leader when one is known, so the caller
// can forward the request there.
type NotLeaderError struct {
	// LeaderID is the leader's node id, empty when no leader is known.
	LeaderID NodeID
	// RaftAddr is the leader's raft address, empty when unknown.
	RaftAddr string
	// HTTPAddr is the leader's HTTP address from the member table, empty when unknown.
	HTTPAddr string
}

// Error describes the leader, if known.
func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "cluster: not the leader (no leader known)"
	}
	return fmt.Sprintf("cluster: not the leader (leader %s at %s, http %q)", e.LeaderID, e.RaftAddr, e.HTTPAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// LeaderOf returns the leader named by err when err is or wraps a *NotLeaderError.
func LeaderOf(err error) (leader *NotLeaderError, ok bool) {
	ok = errors.As(err, &leader)
	return leader, ok
}
