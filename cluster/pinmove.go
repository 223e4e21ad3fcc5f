package cluster

import (
	"fmt"
	"sort"
)

// The replicated side of moving and dropping pins: one command, cmdPinMove, whose
// first byte names the operation. A drain hands each pinned sandbox of the draining
// member to another member matching its selector with the same two phases as a
// partition (begin, then complete or abort; see Planned moves in the package doc),
// and the leader drops pins that never had a sandbox record written under them (a
// create that failed after pinning, see pinsweep.go).

// Operations of cmdPinMove.
const (
	pinOpBegin    byte = 1 // each pin: active at Expect → handoff to To
	pinOpComplete byte = 2 // each pin: in handoff at Expect → active on its Next
	pinOpAbort    byte = 3 // each pin: in handoff at Expect → active on its Owner again
	pinOpDrop     byte = 4 // each pin: at Expect, never written → removed
	pinOpUnmark   byte = 5 // each pin: active at Expect, written → not written (pinsweep.go)
)

// pinOp names one pin at one epoch; To is the handoff target of pinOpBegin.
type pinOp struct {
	Sandbox string
	To      NodeID
	Expect  uint64
}

func encodePinMove(op byte, ops []pinOp) []byte {
	e := encoder{b: make([]byte, 0, 2+len(ops)*48)}
	e.byte(byte(cmdPinMove))
	e.byte(op)
	e.uvarint(uint64(len(ops)))
	for _, o := range ops {
		e.string(o.Sandbox)
		e.string(string(o.To))
		e.uvarint(o.Expect)
	}
	return e.b
}

func (d *decoder) pinOps() []pinOp {
	n := d.count()
	out := make([]pinOp, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, pinOp{Sandbox: d.string(), To: NodeID(d.string()), Expect: d.uvarint()})
	}
	return out
}

// pinMove applies one cmdPinMove to every named pin, or to none: each must be at its
// expected epoch and in the state the operation needs (see the constants). The new
// epoch of a moved pin is index.
func (s *state) pinMove(index uint64, op byte, ops []pinOp) (*state, error) {
	seen := make(map[string]bool, len(ops))
	for _, o := range ops {
		p, ok := s.pins[o.Sandbox]
		if !ok || seen[o.Sandbox] || p.Epoch != o.Expect {
			return nil, fmt.Errorf("%w: pin of %s is at epoch %d, not %d (or repeated)", ErrStaleEpoch, o.Sandbox, p.Epoch, o.Expect)
		}
		seen[o.Sandbox] = true
		if err := s.checkPinOp(op, o, p); err != nil {
			return nil, err
		}
	}
	n := s.withPins()
	for _, o := range ops {
		p := n.pins[o.Sandbox]
		switch op {
		case pinOpBegin:
			p.Assignment = Assignment{Owner: p.Owner, Epoch: index, State: PartitionHandoff, Next: o.To, Prev: p.Epoch}
		case pinOpComplete:
			p.Assignment = Assignment{Owner: p.Next, Epoch: index, State: PartitionActive}
		case pinOpAbort:
			p.Assignment = Assignment{Owner: p.Owner, Epoch: index, State: PartitionActive}
		case pinOpDrop:
			delete(n.pins, o.Sandbox)
			continue
		case pinOpUnmark:
			p.Written = false
		}
		n.pins[o.Sandbox] = p
	}
	return n, nil
}

// checkPinOp validates one operation on pin p.
func (s *state) checkPinOp(op byte, o pinOp, p pin) error {
	switch op {
	case pinOpBegin:
		if p.State != PartitionActive {
			return fmt.Errorf("%w: pin of %s is not active", ErrStaleEpoch, o.Sandbox)
		}
		if o.To == p.Owner || !s.alive(o.To) || !s.members[o.To].matches(p.Selector) {
			return fmt.Errorf("%w: pin handoff target %s", ErrUnknownMember, o.To)
		}
	case pinOpComplete:
		if p.State != PartitionHandoff {
			return fmt.Errorf("%w: pin of %s is not in handoff", ErrStaleEpoch, o.Sandbox)
		}
		if !s.alive(p.Next) {
			return fmt.Errorf("%w: %s", ErrUnknownMember, p.Next)
		}
	case pinOpAbort:
		if p.State != PartitionHandoff {
			return fmt.Errorf("%w: pin of %s is not in handoff", ErrStaleEpoch, o.Sandbox)
		}
	case pinOpDrop:
		if p.State == PartitionHandoff {
			return fmt.Errorf("%w: pin of %s", ErrHandoff, o.Sandbox)
		}
		if p.Written {
			return fmt.Errorf("%w: %s", ErrPinInUse, o.Sandbox)
		}
	case pinOpUnmark:
		if p.State != PartitionActive {
			return fmt.Errorf("%w: pin of %s is not active", ErrStaleEpoch, o.Sandbox)
		}
	default:
		return fmt.Errorf("%w: pin operation %d", ErrInvalid, op)
	}
	return nil
}

// markWritten returns s with the pins of the sandboxes of the batches accepted by
// vs marked Written, or s itself when none changes. It depends only on the tables
// and the verdicts, which every replica computes alike, replaying or not.
func (s *state) markWritten(bs []*Batch, vs []batchVerdict) *state {
	if len(s.pins) == 0 {
		return s
	}
	var n *state
	for i, b := range bs {
		if vs[i].code != batchApplied {
			continue
		}
		src := s
		if n != nil {
			src = n
		}
		p, ok := src.pins[b.Sandbox]
		if !ok || p.Written {
			continue
		}
		if n == nil {
			n = s.withPins()
		}
		p.Written = true
		n.pins[b.Sandbox] = p
	}
	if n == nil {
		return s
	}
	return n
}

// encodePinExtras writes the snapshot's pin section of version 5: for each pin in
// key order, whether a record was written under it, and its handoff target and
// previous epoch.
func (s *state) encodePinExtras(e *encoder, keys []string) {
	for _, k := range keys {
		p := s.pins[k]
		w := byte(0)
		if p.Written {
			w = 1
		}
		e.byte(w)
		e.string(string(p.Next))
		e.uvarint(p.Prev)
	}
}

func (s *state) decodePinExtras(d *decoder) {
	keys := make([]string, 0, len(s.pins))
	for k := range s.pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := s.pins[k]
		p.Written = d.byte() == 1
		p.Next, p.Prev = NodeID(d.string()), d.uvarint()
		if d.err != nil {
			return
		}
		s.pins[k] = p
	}
}
