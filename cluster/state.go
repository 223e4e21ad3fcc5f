package cluster

import (
	"fmt"
	"sort"
)

// state is one immutable version of the replicated tables. The FSM never modifies a
// published state: each change copies what it touches (copy on write) and publishes
// the new value behind an atomic pointer, so readers (Owner, snapshots) take no lock
// and always see one consistent version.
type state struct {
	members map[NodeID]Member
	parts   []Assignment // len Partitions
	pins    map[string]pin
	values  map[string][]byte // the replicated key/value table (value.go)
	// index is the raft index of the command that made this version (0 for the
	// empty state). A node granted a lease at index i serves only once its own
	// replica has reached i (see lease.go).
	index uint64
}

// pin places one sandbox on a member chosen by label selector, overriding its
// partition's owner.
type pin struct {
	Assignment
	Selector map[string]string
	// Written is set by the first sandbox batch accepted under the pin (and kept
	// when the pin moves): the sandbox has records, so the pin is not an orphan.
	Written bool
}

func emptyState() *state {
	return &state{members: map[NodeID]Member{}, parts: make([]Assignment, Partitions), pins: map[string]pin{}, values: map[string][]byte{}}
}

func (s *state) owner(sandboxID string) (NodeID, uint64, bool) {
	if len(s.pins) != 0 {
		if p, ok := s.pins[sandboxID]; ok {
			return p.Owner, p.Epoch, p.State == PartitionActive
		}
	}
	a := s.parts[PartitionOf(sandboxID)]
	return a.Owner, a.Epoch, a.State == PartitionActive
}

func (s *state) alive(id NodeID) bool {
	m, ok := s.members[id]
	return ok && m.Status == StatusAlive
}

func (s *state) withMembers() *state {
	n := *s
	n.members = make(map[NodeID]Member, len(s.members)+1)
	for k, v := range s.members {
		n.members[k] = v
	}
	return &n
}

func (s *state) register(m Member) (*state, error) {
	if m.ID == "" || m.RaftAddr == "" {
		return nil, fmt.Errorf("%w: member needs an id and a raft address", ErrInvalid)
	}
	if old, ok := s.members[m.ID]; ok && old.equal(m) {
		return s, nil
	}
	n := s.withMembers()
	n.members[m.ID] = m
	return n, nil
}

func (s *state) setStatus(id NodeID, st Status) (*state, error) {
	m, ok := s.members[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMember, id)
	}
	if st < StatusAlive || st > StatusDraining {
		return nil, fmt.Errorf("%w: status %d", ErrInvalid, st)
	}
	if m.Status == st {
		return s, nil
	}
	n := s.withMembers()
	m.Status = st
	n.members[id] = m
	return n, nil
}

// fail marks a member down and moves its partitions in one step, so that no replica
// ever sees the member down with partitions still on it, or the reverse.
func (s *state) fail(index uint64, id NodeID, moves []move) (*state, error) {
	down, err := s.setStatus(id, StatusDown)
	if err != nil {
		return nil, err
	}
	if len(moves) == 0 {
		return down, nil
	}
	return down.assign(index, moves)
}

// owns reports whether id owns any partition or pin in s.
func (s *state) owns(id NodeID) bool {
	for _, a := range s.parts {
		if a.Owner == id && a.State == PartitionActive {
			return true
		}
	}
	for _, p := range s.pins {
		if p.Owner == id && p.State == PartitionActive {
			return true
		}
	}
	return false
}

// assign applies every move or none: one stale epoch rejects the command, because
// the leader computed all of them from a table that is no longer current.
func (s *state) assign(index uint64, moves []move) (*state, error) {
	seen := make(map[int]bool, len(moves))
	for _, m := range moves {
		if m.P < 0 || m.P >= Partitions || seen[m.P] {
			return nil, fmt.Errorf("%w: partition %d out of range or repeated", ErrInvalid, m.P)
		}
		seen[m.P] = true
		if !s.alive(m.Owner) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownMember, m.Owner)
		}
		if cur := s.parts[m.P].Epoch; cur != m.Expect {
			return nil, fmt.Errorf("%w: partition %d is at epoch %d, not %d", ErrStaleEpoch, m.P, cur, m.Expect)
		}
		if s.parts[m.P].State == PartitionHandoff {
			// Only CompleteHandoff or AbortHandoff ends a handoff (handoff.go).
			return nil, fmt.Errorf("%w: partition %d", ErrHandoff, m.P)
		}
	}
	n := *s
	n.parts = make([]Assignment, Partitions)
	copy(n.parts, s.parts)
	for _, m := range moves {
		n.parts[m.P] = Assignment{Owner: m.Owner, Epoch: index, State: PartitionActive}
	}
	return &n, nil
}

func (s *state) withPins() *state {
	n := *s
	n.pins = make(map[string]pin, len(s.pins)+1)
	for k, v := range s.pins {
		n.pins[k] = v
	}
	return &n
}

func (s *state) pin(index uint64, sandbox string, sel map[string]string, owner NodeID, expect uint64) (*state, error) {
	if sandbox == "" {
		return nil, fmt.Errorf("%w: empty sandbox id", ErrInvalid)
	}
	cur := s.pins[sandbox]
	if cur.Epoch != expect {
		return nil, fmt.Errorf("%w: pin of %s is at epoch %d, not %d", ErrStaleEpoch, sandbox, cur.Epoch, expect)
	}
	if cur.State == PartitionHandoff {
		// Only a pin operation ends a pin's handoff (pinmove.go).
		return nil, fmt.Errorf("%w: pin of %s", ErrHandoff, sandbox)
	}
	p := pin{Assignment: Assignment{Epoch: index}, Selector: sel, Written: cur.Written}
	if owner != "" {
		if !s.alive(owner) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownMember, owner)
		}
		p.Owner, p.State = owner, PartitionActive
	}
	n := s.withPins()
	n.pins[sandbox] = p
	return n, nil
}

func (s *state) unpin(sandbox string, expect uint64) (*state, error) {
	p, ok := s.pins[sandbox]
	if !ok || p.Epoch != expect {
		return nil, fmt.Errorf("%w: pin of %s is at epoch %d, not %d", ErrStaleEpoch, sandbox, p.Epoch, expect)
	}
	n := s.withPins()
	delete(n.pins, sandbox)
	return n, nil
}

// snapshotVersion is the first byte of an encoded state. Version 2 adds the index
// after it; version 1 (no index) still decodes, with index 0. Version 3 appends the
// key/value table; earlier versions decode with an empty one. Version 4 appends the
// targets of partitions in handoff (handoff.go) after the table; earlier versions
// have none. (A version 3 with handoff targets instead of the table was never
// released: it existed only on a development branch.) Version 5 appends, for each
// pin in key order, whether a record was written under it and its handoff target
// and previous epoch (pinmove.go); earlier versions have neither.
const snapshotVersion = 5

// encode writes the state deterministically: members and pins in key order.
func (s *state) encode() []byte {
	e := encoder{b: make([]byte, 0, 64*1024)}
	e.byte(snapshotVersion)
	e.uvarint(s.index)
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.member(s.members[NodeID(id)])
	}
	for _, a := range s.parts {
		e.assignment(a)
	}
	keys := make([]string, 0, len(s.pins))
	for k := range s.pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		p := s.pins[k]
		e.string(k)
		e.labels(p.Selector)
		e.assignment(p.Assignment)
	}
	encodeValues(&e, s.values)
	s.encodeHandoffs(&e)
	s.encodePinExtras(&e, keys)
	return e.b
}

func decodeState(b []byte) (*state, error) {
	d := decoder{b: b}
	v := d.byte()
	if d.err == nil && (v < 1 || v > snapshotVersion) {
		return nil, fmt.Errorf("%w: snapshot version %d", ErrCorrupt, v)
	}
	s := emptyState()
	if v >= 2 {
		s.index = d.uvarint()
	}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		m := d.member()
		s.members[m.ID] = m
	}
	for i := range s.parts {
		s.parts[i] = d.assignment()
	}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		k := d.string()
		sel := d.labels()
		s.pins[k] = pin{Selector: sel, Assignment: d.assignment()}
	}
	if v >= 3 {
		s.values = decodeValues(&d)
	}
	if v >= 4 {
		s.decodeHandoffs(&d)
	}
	if v >= 5 {
		s.decodePinExtras(&d)
	} else {
		// Whether a record was written under an older pin is not known: count it
		// written, so the orphan sweep never drops the pin of a sandbox that exists.
		for k, p := range s.pins {
			p.Written = true
			s.pins[k] = p
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return s, nil
}
