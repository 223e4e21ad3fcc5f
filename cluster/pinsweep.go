package cluster

import (
	"context"
	"fmt"
)

// Orphan pins. A create in a pool pins its sandbox first (Pin), then creates it on
// the pinned member, whose first write of the sandbox's records marks the pin
// written (pin.Written). A create that fails between the two (a policy denial on
// the pinned member, an activation error, a client gone, a node dying) would leave
// a pin with nothing under it forever. Two things remove it:
//
//  1. The gateway drops the pin on the create's failure path (DropPin).
//  2. The leader drops every pin it has seen unwritten at the same epoch for longer
//     than Config.OrphanPinGrace, a sweep for what the gateway could not do.
//
// Both use pinOpDrop, which Apply refuses for a pin that has been written: whether
// a record landed is decided in log order on every replica, never from a read
// racing the create. A create whose record write comes after the drop is fenced
// (its epoch was the pin's), so it fails rather than land outside its pool.

// pinRef names one pin at one epoch.
type pinRef struct {
	sandbox string
	epoch   uint64
}

// maxDropsPerEntry bounds the pins one sweep entry drops.
const maxDropsPerEntry = 256

// DropPin removes the pin of sandboxID if no record of the sandbox was ever written
// under it; it must run on the leader (a *NotLeaderError elsewhere). epoch, when not
// zero, is the pin's epoch as the caller knows it (from Pin): a pin that has moved
// or been replaced since is left alone (ErrStaleEpoch). A sandbox that is not
// pinned is nil; a pin with records is ErrPinInUse.
func (n *Node) DropPin(ctx context.Context, sandboxID string, epoch uint64) error {
	if err := n.dropPin(ctx, sandboxID, epoch); err != nil {
		return fmt.Errorf("failed to drop the pin of %s: %w", sandboxID, err)
	}
	return nil
}

func (n *Node) dropPin(ctx context.Context, sandboxID string, epoch uint64) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	p, ok := n.fsm.cur.Load().pins[sandboxID]
	switch {
	case !ok:
		return nil
	case epoch != 0 && p.Epoch != epoch:
		return fmt.Errorf("%w: pin of %s is at epoch %d, not %d", ErrStaleEpoch, sandboxID, p.Epoch, epoch)
	case p.Written:
		return ErrPinInUse
	}
	return n.apply(ctx, encodePinMove(pinOpDrop, []pinOp{{Sandbox: sandboxID, Expect: p.Epoch}}))
}

// sweepPins is the leader's orphan-pin pass: it drops the pins this leadership has
// seen unwritten, at one epoch, for longer than OrphanPinGrace.
func (n *Node) sweepPins(ctx context.Context, c *handoffClock) {
	if n.sweepOff.Load() {
		return
	}
	s := n.fsm.cur.Load()
	now := n.now()
	current := make(map[pinRef]bool, len(c.orphans))
	var drop []pinOp
	for sb, p := range s.pins {
		if p.Written || p.State == PartitionHandoff {
			continue
		}
		ref := pinRef{sb, p.Epoch}
		current[ref] = true
		first, ok := c.orphans[ref]
		if !ok {
			c.orphans[ref] = now
			continue
		}
		if now-first > n.cfg.OrphanPinGrace && len(drop) < maxDropsPerEntry {
			drop = append(drop, pinOp{Sandbox: sb, Expect: p.Epoch})
		}
	}
	for ref := range c.orphans {
		if !current[ref] {
			delete(c.orphans, ref)
		}
	}
	if len(drop) == 0 {
		return
	}
	if err := n.apply(ctx, encodePinMove(pinOpDrop, drop)); err != nil {
		n.log.Warn("cluster: failed to drop orphan pins", "pins", len(drop), "err", err)
		return
	}
	n.log.Info("cluster: dropped pins no sandbox record was written under", "pins", len(drop), "grace", n.cfg.OrphanPinGrace)
}
