package cluster

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// The encoding of commands and snapshots is uvarints and length-prefixed strings. It is
// compact, has no reflection, and is deterministic: maps are written in key order, so
// the same state always encodes to the same bytes.

type encoder struct{ b []byte }

func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) string(s string)  { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.b = append(e.b, b...) }

func (e *encoder) labels(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.string(m[k])
	}
}

func (e *encoder) member(m Member) {
	e.string(string(m.ID))
	e.string(m.RaftAddr)
	e.string(m.HTTPAddr)
	e.labels(m.Labels)
	e.byte(byte(m.Status))
}

func (e *encoder) assignment(a Assignment) {
	e.string(string(a.Owner))
	e.uvarint(a.Epoch)
	e.byte(byte(a.State))
}

func (e *encoder) moves(moves []move) {
	e.uvarint(uint64(len(moves)))
	for _, m := range moves {
		e.uvarint(uint64(m.P))
		e.string(string(m.Owner))
		e.uvarint(m.Expect)
	}
}

// decoder reads what encoder wrote. The first failure is latched in err and every
// later read returns a zero value, so callers check err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrCorrupt, what)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || uint64(len(d.b)) < n {
		d.fail("string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// bytes returns a copy (nil when empty): the input may be a bbolt page that is
// only valid inside its transaction.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || uint64(len(d.b)) < n {
		d.fail("bytes")
		return nil
	}
	var out []byte
	if n > 0 {
		out = append([]byte(nil), d.b[:n]...)
	}
	d.b = d.b[n:]
	return out
}

// count reads a length and rejects one larger than the bytes left, so a corrupt
// length cannot make us allocate a huge map.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("count")
		return 0
	}
	return int(n)
}

func (d *decoder) labels() map[string]string {
	n := d.count()
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string()
		m[k] = d.string()
	}
	return m
}

func (d *decoder) member() Member {
	return Member{
		ID:       NodeID(d.string()),
		RaftAddr: d.string(),
		HTTPAddr: d.string(),
		Labels:   d.labels(),
		Status:   Status(d.byte()),
	}
}

func (d *decoder) assignment() Assignment {
	return Assignment{Owner: NodeID(d.string()), Epoch: d.uvarint(), State: PartitionState(d.byte())}
}

func (d *decoder) moves() []move {
	n := d.count()
	moves := make([]move, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		moves = append(moves, move{P: int(d.uvarint()), Owner: NodeID(d.string()), Expect: d.uvarint()})
	}
	return moves
}

// done fails unless every byte was consumed.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	return d.err
}
