package actor

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// boltReader is a Reader on one sandbox's key range. Its cursor steps recover a bbolt
// panic into broken (bolt_damage.go); fn's own code runs outside them.
type boltReader struct {
	c      *bolt.Cursor
	pfx    []byte
	broken string // what panicked, or ""
}

func (r *boltReader) Get(key []byte) []byte {
	full := append(r.pfx[:len(r.pfx):len(r.pfx)], key...)
	// Seek steps on to the next page when key would be past the last of its own; a
	// panic there is not key's (see pastEnd).
	k, v := r.seekIn(full, span{p: full, exact: true})
	if !bytes.Equal(k, full) {
		return nil
	}
	return v
}

func (r *boltReader) Scan(prefix, from []byte, fn func(k, v []byte) bool) {
	p := append(r.pfx[:len(r.pfx):len(r.pfx)], prefix...)
	start := p
	if bytes.Compare(from, prefix) > 0 {
		start = append(r.pfx[:len(r.pfx):len(r.pfx)], from...)
	}
	// The step past the last key with prefix p may land on the next page, which may
	// hold only later keys: a panic there is not this range's (see pastEnd).
	for k, v := r.seekIn(start, span{p: p}); k != nil && bytes.HasPrefix(k, p); k, v = r.nextIn(span{p: p}) {
		if !fn(k[len(r.pfx):], v) {
			return
		}
	}
}

func (r *boltReader) Last(prefix []byte) ([]byte, []byte) {
	p := append(r.pfx[:len(r.pfx):len(r.pfx)], prefix...)
	// Seek to the first key after every key with prefix p, then step back.
	end := prefixEnd(p)
	var k, v []byte
	if end == nil {
		k, v = r.last()
	} else if k, _ = r.seekIn(end, span{}); k == nil {
		k, v = r.last()
	} else {
		k, v = r.prev()
	}
	if k == nil || !bytes.HasPrefix(k, p) {
		return nil, nil
	}
	return k[len(r.pfx):], v
}

// prefixEnd returns the smallest key greater than every key with prefix p, or nil.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
