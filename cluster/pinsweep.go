package cluster

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
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
//
// A delete drops its pin with its records (pindelete.go). The sweep is the safety
// net for a written pin whose records are gone some other way (deleted while the
// pin was in handoff, or by a build without that rule): a written pin the leader
// has seen with no record in its state file, at one epoch, past the grace, is first
// unmarked (pinOpUnmark), which makes it an orphan like any other. Every drop also
// requires the leader's file to hold no record of the sandbox, read after loading
// the tables that show the pin unwritten: a record written before that read is seen
// there, and one written after marks the pin written again before the drop applies,
// so Apply refuses it. The unmark alone removes nothing.

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
// seen unwritten, at one epoch, for longer than OrphanPinGrace, and unmarks the
// written ones it has seen as long without a record.
func (n *Node) sweepPins(ctx context.Context, c *handoffClock) {
	if n.sweepOff.Load() {
		return
	}
	s := n.fsm.cur.Load()
	now := n.now()
	// Written pins are looked up in the file at most twice per grace: they are
	// every live pinned sandbox, and only a delete gone wrong leaves one empty.
	scan := c.scanned == 0 || now-c.scanned >= n.cfg.OrphanPinGrace/2
	held, err := n.sandboxesWithRecords(s, scan)
	if err != nil {
		n.log.Warn("cluster: failed to read sandbox records for the pin sweep", "err", err)
		return
	}
	if scan {
		c.scanned = now
	}
	current := make(map[pinRef]bool, len(c.orphans))
	var drop, unmark []pinOp
	for sb, p := range s.pins {
		ref := pinRef{sb, p.Epoch}
		if p.Written && !scan {
			if _, ok := c.orphans[ref]; ok {
				current[ref] = true // not looked at this time: keep its clock
			}
			continue
		}
		if p.State == PartitionHandoff || held[sb] {
			continue
		}
		current[ref] = true
		first, ok := c.orphans[ref]
		if !ok {
			c.orphans[ref] = now
			continue
		}
		if now-first <= n.cfg.OrphanPinGrace {
			continue
		}
		switch {
		case !p.Written && len(drop) < maxDropsPerEntry:
			drop = append(drop, pinOp{Sandbox: sb, Expect: p.Epoch})
		case p.Written && p.State == PartitionActive && len(unmark) < maxDropsPerEntry:
			unmark = append(unmark, pinOp{Sandbox: sb, Expect: p.Epoch})
		}
	}
	for ref := range c.orphans {
		if !current[ref] {
			delete(c.orphans, ref)
		}
	}
	n.applySweep(ctx, pinOpUnmark, unmark, "unmarked written pins whose sandbox has no record left")
	n.applySweep(ctx, pinOpDrop, drop, "dropped pins with no sandbox record under them")
}

// applySweep applies one sweep operation to ops, if any, and logs the outcome.
func (n *Node) applySweep(ctx context.Context, op byte, ops []pinOp, what string) {
	if len(ops) == 0 {
		return
	}
	if err := n.apply(ctx, encodePinMove(op, ops)); err != nil {
		n.log.Warn("cluster: failed to sweep pins", "op", op, "pins", len(ops), "err", err)
		return
	}
	n.log.Info("cluster: "+what, "pins", len(ops), "grace", n.cfg.OrphanPinGrace)
}

// sandboxesWithRecords returns which pinned sandboxes of s have a record in this
// node's state file, looking at the written pins only when written is set. The
// file is read after s was loaded, so it holds every record written before s's
// pins were last changed.
func (n *Node) sandboxesWithRecords(s *state, written bool) (map[string]bool, error) {
	held := make(map[string]bool)
	if len(s.pins) == 0 {
		return held, nil
	}
	err := n.fsm.db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketData).Cursor()
		for sb, p := range s.pins {
			if p.Written && !written {
				continue
			}
			pfx := dataKey(sb, nil)
			if k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx) {
				held[sb] = true
			}
		}
		return nil
	})
	return held, err
}
