package cluster

import (
	"cmp"
	"fmt"
	"slices"
)

// The replicated side of planned moves: the three handoff commands, their encoding
// and the snapshot's handoff section. The leader's side is in handoff_leader.go, the
// old owner's notification and report in handoff_report.go; the protocol is in the
// package doc.

// Handoff is one planned move of partitions from one member to another, as the old
// owner is told of it (Config.OnHandoff).
type Handoff struct {
	// From is the member that owned the partitions and must stop running their
	// sandboxes.
	From NodeID
	// To is the member that will own them.
	To NodeID
	// Epoch is the index of the BeginHandoff entry, the partitions' epoch while they
	// move. The store accepts the old owner's passivation writes stamped with it or
	// with the epoch before the handoff (Assignment.Prev) until the handoff ends.
	Epoch uint64
	// Partitions are the partitions moving, in increasing order.
	Partitions []int
	// Sandboxes are the pinned sandboxes moving (a drain moves pins too, each to a
	// member matching its selector), in id order. A handoff moves partitions or
	// pins, never both.
	Sandboxes []string
}

// handoff asks for one partition to move from From to To, provided its epoch is
// still Expect.
type handoff struct {
	P        int
	From, To NodeID
	Expect   uint64
}

// epochRef names one partition at one epoch (AbortHandoff).
type epochRef struct {
	P      int
	Expect uint64
}

func encodeBeginHandoff(hs []handoff) []byte {
	e := encoder{b: make([]byte, 0, 1+len(hs)*32)}
	e.byte(byte(cmdBeginHandoff))
	e.uvarint(uint64(len(hs)))
	for _, h := range hs {
		e.uvarint(uint64(h.P))
		e.string(string(h.From))
		e.string(string(h.To))
		e.uvarint(h.Expect)
	}
	return e.b
}

func (d *decoder) handoffs() []handoff {
	n := d.count()
	out := make([]handoff, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, handoff{P: int(d.uvarint()), From: NodeID(d.string()), To: NodeID(d.string()), Expect: d.uvarint()})
	}
	return out
}

// encodeCompleteHandoff gives each move's partition, in handoff at the move's
// expected epoch, to the move's owner (normally the handoff's Next).
func encodeCompleteHandoff(moves []move) []byte {
	e := encoder{b: make([]byte, 0, 1+len(moves)*24)}
	e.byte(byte(cmdCompleteHandoff))
	e.moves(moves)
	return e.b
}

func encodeAbortHandoff(refs []epochRef) []byte {
	e := encoder{b: make([]byte, 0, 1+len(refs)*8)}
	e.byte(byte(cmdAbortHandoff))
	e.uvarint(uint64(len(refs)))
	for _, r := range refs {
		e.uvarint(uint64(r.P))
		e.uvarint(r.Expect)
	}
	return e.b
}

func (d *decoder) epochRefs() []epochRef {
	n := d.count()
	out := make([]epochRef, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, epochRef{P: int(d.uvarint()), Expect: d.uvarint()})
	}
	return out
}

// withParts returns a copy of s whose partition table may be modified.
func (s *state) withParts() *state {
	n := *s
	n.parts = make([]Assignment, Partitions)
	copy(n.parts, s.parts)
	return &n
}

// checkRef validates one partition of a handoff command: in range, not repeated,
// at the expected epoch and in the wanted state.
func (s *state) checkRef(seen map[int]bool, p int, expect uint64, want PartitionState) error {
	if p < 0 || p >= Partitions || seen[p] {
		return fmt.Errorf("%w: partition %d out of range or repeated", ErrInvalid, p)
	}
	seen[p] = true
	a := s.parts[p]
	if a.Epoch != expect {
		return fmt.Errorf("%w: partition %d is at epoch %d, not %d", ErrStaleEpoch, p, a.Epoch, expect)
	}
	if a.State != want {
		return fmt.Errorf("%w: partition %d is in state %d, not %d", ErrStaleEpoch, p, a.State, want)
	}
	return nil
}

// beginHandoff puts every named partition in handoff, or none: each must be active
// on From at the expected epoch, and To an alive member other than From. The new
// epoch is index; Owner stays From, so the old owner's last writes still pass.
func (s *state) beginHandoff(index uint64, hs []handoff) (*state, error) {
	seen := make(map[int]bool, len(hs))
	for _, h := range hs {
		if err := s.checkRef(seen, h.P, h.Expect, PartitionActive); err != nil {
			return nil, err
		}
		if s.parts[h.P].Owner != h.From {
			return nil, fmt.Errorf("%w: partition %d is owned by %s, not %s", ErrStaleEpoch, h.P, s.parts[h.P].Owner, h.From)
		}
		if h.To == h.From || !s.alive(h.To) {
			return nil, fmt.Errorf("%w: handoff target %s", ErrUnknownMember, h.To)
		}
	}
	n := s.withParts()
	for _, h := range hs {
		n.parts[h.P] = Assignment{Owner: h.From, Epoch: index, State: PartitionHandoff, Next: h.To, Prev: h.Expect}
	}
	return n, nil
}

// completeHandoff ends every named handoff, or none: each partition must be in
// handoff at the expected epoch, and its new owner alive. The new epoch is index.
func (s *state) completeHandoff(index uint64, moves []move) (*state, error) {
	seen := make(map[int]bool, len(moves))
	for _, m := range moves {
		if err := s.checkRef(seen, m.P, m.Expect, PartitionHandoff); err != nil {
			return nil, err
		}
		if !s.alive(m.Owner) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownMember, m.Owner)
		}
	}
	n := s.withParts()
	for _, m := range moves {
		n.parts[m.P] = Assignment{Owner: m.Owner, Epoch: index, State: PartitionActive}
	}
	return n, nil
}

// abortHandoff gives every named partition in handoff at the expected epoch back to
// its old owner, or does nothing. The new epoch is index.
func (s *state) abortHandoff(index uint64, refs []epochRef) (*state, error) {
	seen := make(map[int]bool, len(refs))
	for _, r := range refs {
		if err := s.checkRef(seen, r.P, r.Expect, PartitionHandoff); err != nil {
			return nil, err
		}
	}
	n := s.withParts()
	for _, r := range refs {
		n.parts[r.P] = Assignment{Owner: s.parts[r.P].Owner, Epoch: index, State: PartitionActive}
	}
	return n, nil
}

// handoffsFrom returns the handoffs in s that move partitions away from id, one per
// epoch and target, ordered by epoch then target.
func (s *state) handoffsFrom(id NodeID) []Handoff {
	type key struct {
		epoch uint64
		to    NodeID
	}
	by := map[key]*Handoff{}
	var keys []key
	for p, a := range s.parts {
		if a.State != PartitionHandoff || a.Owner != id {
			continue
		}
		k := key{a.Epoch, a.Next}
		h := by[k]
		if h == nil {
			h = &Handoff{From: id, To: a.Next, Epoch: a.Epoch}
			by[k] = h
			keys = append(keys, k)
		}
		h.Partitions = append(h.Partitions, p)
	}
	pinned := map[key]*Handoff{}
	for sb, p := range s.pins {
		if p.State != PartitionHandoff || p.Owner != id {
			continue
		}
		k := key{p.Epoch, p.Next}
		h := pinned[k]
		if h == nil {
			h = &Handoff{From: id, To: p.Next, Epoch: p.Epoch}
			pinned[k] = h
			keys = append(keys, k)
		}
		h.Sandboxes = append(h.Sandboxes, sb)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.epoch, b.epoch); c != 0 {
			return c
		}
		return cmp.Compare(a.to, b.to)
	})
	out := make([]Handoff, 0, len(keys))
	for _, k := range keys {
		if h := by[k]; h != nil {
			out = append(out, *h)
			continue
		}
		h := pinned[k]
		slices.Sort(h.Sandboxes)
		out = append(out, *h)
	}
	return out
}

// encodeHandoffs writes the snapshot's handoff section (version 4): the target and
// the previous epoch of every partition in handoff, in partition order.
func (s *state) encodeHandoffs(e *encoder) {
	var ps []int
	for p, a := range s.parts {
		if a.Next != "" {
			ps = append(ps, p)
		}
	}
	e.uvarint(uint64(len(ps)))
	for _, p := range ps {
		e.uvarint(uint64(p))
		e.string(string(s.parts[p].Next))
		e.uvarint(s.parts[p].Prev)
	}
}

func (s *state) decodeHandoffs(d *decoder) {
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		p, next, prev := d.uvarint(), NodeID(d.string()), d.uvarint()
		if d.err == nil && p >= Partitions {
			d.err = fmt.Errorf("%w: handoff of partition %d", ErrCorrupt, p)
			return
		}
		if d.err == nil {
			s.parts[p].Next, s.parts[p].Prev = next, prev
		}
	}
}
