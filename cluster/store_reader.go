package cluster

import (
	"bytes"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Reader reads one sandbox's records inside Node.Read. It has the contract of the
// actor's Reader: keys are the sandbox's own (without its id), and the Reader and
// every slice it returns are valid only until the Read callback returns.
type Reader interface {
	// Get returns the value under key, or nil.
	Get(key []byte) []byte
	// Scan calls fn for keys that start with prefix and are >= from (from nil: all),
	// in ascending order, until fn returns false.
	Scan(prefix, from []byte, fn func(k, v []byte) bool)
	// Last returns the greatest key with prefix and its value, or nils.
	Last(prefix []byte) (k, v []byte)
}

// mergedReader reads one sandbox from a read transaction of the state file with the
// sandbox's pending delta (overlay.go) on top: a key the delta holds reads as the
// delta says, and a DeleteSandbox in the delta hides every record of the file. It
// lives inside one Read's transaction and is used by its callback's goroutine.
type mergedReader struct {
	c   *bolt.Cursor // on bucketData
	pfx []byte       // sandbox NUL
	d   *delta       // nil: none
}

var _ Reader = (*mergedReader)(nil)

func (r *mergedReader) full(key []byte) []byte {
	return append(r.pfx[:len(r.pfx):len(r.pfx)], key...)
}

// Get implements Reader.
func (r *mergedReader) Get(key []byte) []byte {
	if r.d != nil {
		if op, ok := r.d.ops[string(key)]; ok {
			if op.Delete {
				return nil
			}
			return nonNil(op.Value)
		}
		if r.d.cleared {
			return nil
		}
	}
	full := r.full(key)
	k, v := r.c.Seek(full)
	if !bytes.Equal(k, full) {
		return nil
	}
	return v
}

// nonNil makes a put of a nil value read as present (empty), as it does in bbolt.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Scan implements Reader: a merge of the file's keys and the delta's, in order.
func (r *mergedReader) Scan(prefix, from []byte, fn func(k, v []byte) bool) {
	start := prefix
	if bytes.Compare(from, prefix) > 0 {
		start = from
	}
	p := r.full(prefix)
	// The file side: keys of the sandbox with prefix, from start, unless cleared.
	var fk, fv []byte
	fileOn := r.d == nil || !r.d.cleared
	if fileOn {
		fk, fv = r.c.Seek(r.full(start))
	}
	nextFile := func() {
		if fileOn && fk != nil && bytes.HasPrefix(fk, p) {
			return
		}
		fk = nil
	}
	nextFile()
	// The delta side: its sorted keys with prefix, from start.
	var keys []string
	if r.d != nil {
		i := sort.SearchStrings(r.d.keys, string(start))
		keys = r.d.keys[i:]
	}
	for {
		var dk string
		hasD := len(keys) > 0 && strings.HasPrefix(keys[0], string(prefix))
		if hasD {
			dk = keys[0]
		}
		if fk == nil && !hasD {
			return
		}
		var fkey []byte
		if fk != nil {
			fkey = fk[len(r.pfx):]
		}
		switch cmp := compareKey(fkey, fk != nil, dk, hasD); {
		case cmp < 0: // the file's key comes first
			if _, shadowed := r.opOf(fkey); !shadowed {
				if !fn(fkey, fv) {
					return
				}
			}
			fk, fv = r.c.Next()
			nextFile()
		default: // the delta's key comes first, or both are the same key: the delta wins
			if cmp == 0 {
				fk, fv = r.c.Next()
				nextFile()
			}
			keys = keys[1:]
			if op := r.d.ops[dk]; !op.Delete {
				if !fn([]byte(dk), nonNil(op.Value)) {
					return
				}
			}
		}
	}
}

// compareKey orders a file key and a delta key; a missing one sorts last.
func compareKey(f []byte, hasF bool, d string, hasD bool) int {
	switch {
	case !hasD:
		return -1
	case !hasF:
		return 1
	}
	return bytes.Compare(f, []byte(d))
}

func (r *mergedReader) opOf(key []byte) (Op, bool) {
	if r.d == nil {
		return Op{}, false
	}
	op, ok := r.d.ops[string(key)]
	return op, ok
}

// Last implements Reader: the greater of the delta's last live key with prefix and
// the file's last key with prefix that the delta does not hold.
func (r *mergedReader) Last(prefix []byte) ([]byte, []byte) {
	var dk []byte
	var dv []byte
	if r.d != nil {
		for i := len(r.d.keys) - 1; i >= 0; i-- {
			k := r.d.keys[i]
			if k < string(prefix) {
				break
			}
			if op := r.d.ops[k]; strings.HasPrefix(k, string(prefix)) && !op.Delete {
				dk, dv = []byte(k), nonNil(op.Value)
				break
			}
		}
	}
	var fk, fv []byte
	if r.d == nil || !r.d.cleared {
		p := r.full(prefix)
		var k, v []byte
		if end := prefixEnd(p); end == nil {
			k, v = r.c.Last()
		} else if k, _ = r.c.Seek(end); k == nil {
			k, v = r.c.Last()
		} else {
			k, v = r.c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, p); k, v = r.c.Prev() {
			if _, shadowed := r.opOf(k[len(r.pfx):]); !shadowed {
				fk, fv = k[len(r.pfx):], v
				break
			}
		}
	}
	switch {
	case fk == nil && dk == nil:
		return nil, nil
	case fk == nil || (dk != nil && bytes.Compare(dk, fk) > 0):
		return dk, dv
	}
	return fk, fv
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
