package actor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Which page a bbolt panic came from, and what it can hold.
//
// A cursor that reads one sandbox's range finds where the range ends only by stepping
// one key past it, which may be onto the next page. If that page is damaged, the panic
// is about the sandbox after, not this one. bbolt names the page in its panics, and the
// parent branch page (which is fine, or the walk would not have got there) holds the
// page's first key, or a smaller one: every key on a page is at least the key its
// parent routes to it by. So a page whose branch key is at or past the range's end
// holds nothing of the range. bbolt has no API for branch keys, so they are read from
// the file, only after a panic.

// pageInPanic matches the page id in bbolt's panics about a damaged page:
// "assertion failed: Page expected to be: 20, but self identifies as 1727…",
// "invalid page type: 20: 0", "assertion failed: page 20: has unexpected type/flags".
// It is compiled at the first such panic, once: package initialisation runs in every
// process of the binary, and this is needed only after a store was found damaged. (A
// package-level sync.OnceValue would itself allocate at initialisation.)
func pageInPanic() *regexp.Regexp {
	pageInPanicRE.once.Do(func() {
		pageInPanicRE.re = regexp.MustCompile(`(?:Page expected to be: |invalid page type: |page )(\d+)`)
	})
	return pageInPanicRE.re
}

var pageInPanicRE struct {
	once sync.Once
	re   *regexp.Regexp
}

// On-disk layout of a bbolt page (go.etcd.io/bbolt/internal/common/page.go): a 16-byte
// header (id u64, flags u16, count u16, overflow u32), then count 16-byte elements; a
// branch element is pos u32, ksize u32, pgid u64, pos counting from the element.
const (
	bpHeader = 16
	bpElem   = 16
	bpBranch = 0x01
)

// pastEnd reports whether panic p, from a cursor step in bucket b, came from a page that
// holds only keys at or past end. Unknown (a fault, an unreadable parent) is false.
func pastEnd(b *bolt.Bucket, p any, end []byte) bool {
	m := pageInPanic().FindStringSubmatch(fmt.Sprint(p))
	if m == nil {
		return false
	}
	id, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return false
	}
	first, ok := branchKeyOf(b.Tx().DB(), uint64(b.Root()), id)
	return ok && bytes.Compare(first, end) >= 0
}

// branchKeyOf finds the branch element that points at page target in the tree under
// root and returns its key. It reads the branch pages from the file: the pages of a
// tree a transaction still reads are never rewritten in place.
func branchKeyOf(db *bolt.DB, root, target uint64) ([]byte, bool) {
	f, err := os.Open(db.Path())
	if err != nil {
		return nil, false
	}
	defer f.Close()
	size := uint64(db.Info().PageSize)
	var find func(id uint64, depth int) ([]byte, bool)
	find = func(id uint64, depth int) ([]byte, bool) {
		hdr := make([]byte, bpHeader)
		if depth > 32 || id == target {
			return nil, false
		}
		if _, err := f.ReadAt(hdr, int64(id*size)); err != nil || binary.LittleEndian.Uint16(hdr[8:]) != bpBranch {
			return nil, false
		}
		count, overflow := int(binary.LittleEndian.Uint16(hdr[10:])), uint64(binary.LittleEndian.Uint32(hdr[12:]))
		page := make([]byte, (overflow+1)*size)
		if _, err := f.ReadAt(page, int64(id*size)); err != nil || bpHeader+count*bpElem > len(page) {
			return nil, false
		}
		children := make([]uint64, count)
		for i := range count {
			e := bpHeader + i*bpElem
			pos, ksize := int(binary.LittleEndian.Uint32(page[e:])), int(binary.LittleEndian.Uint32(page[e+4:]))
			children[i] = binary.LittleEndian.Uint64(page[e+8:])
			if children[i] == target {
				if e+pos+ksize > len(page) || pos < 0 || ksize < 0 {
					return nil, false
				}
				return bytes.Clone(page[e+pos : e+pos+ksize]), true
			}
		}
		for _, c := range children {
			if k, ok := find(c, depth+1); ok {
				return k, true
			}
		}
		return nil, false
	}
	return find(root, 0)
}
