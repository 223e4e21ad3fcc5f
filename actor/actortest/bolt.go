package actortest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The on-disk page layout of bbolt (go.etcd.io/bbolt/internal/common/page.go), read
// here to find which page holds a key: a 16-byte header (id u64, flags u16, count u16,
// overflow u32), then count 16-byte elements. A branch element is pos u32, ksize u32,
// pgid u64; a leaf element is flags u32, pos u32, ksize u32, vsize u32. pos counts
// from the element's own start.
const (
	pageHeaderSize = 16
	pageElemSize   = 16
	pageBranch     = 0x01
	pageLeaf       = 0x02
)

// Leaf is one leaf page of a bbolt bucket and the keys on it.
type Leaf struct {
	ID   uint64
	Keys [][]byte
}

// BoltLeaves returns every leaf page of the top-level bucket of the closed bbolt file
// at path, in key order, and the file's page size, reading the pages from the file
// itself. It is for tests that damage one page on purpose.
func BoltLeaves(path, bucket string) (leaves []Leaf, pageSize int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return nil, 0, err
	}
	var root uint64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		root = uint64(b.Root())
		return nil
	})
	pageSize = db.Info().PageSize
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, err
	}
	if root == 0 {
		return nil, 0, fmt.Errorf("bucket %q is inline: give it more data", bucket)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var walk func(id uint64) error
	walk = func(id uint64) error {
		p := file[int(id)*pageSize:]
		flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
		for i := range count {
			e := p[pageHeaderSize+i*pageElemSize:]
			switch flags {
			case pageBranch:
				if err := walk(binary.LittleEndian.Uint64(e[8:])); err != nil {
					return err
				}
			case pageLeaf:
				pos, ksize := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
				if i == 0 {
					leaves = append(leaves, Leaf{ID: id})
				}
				l := &leaves[len(leaves)-1]
				l.Keys = append(l.Keys, bytes.Clone(e[pos:pos+ksize]))
			default:
				return fmt.Errorf("page %d: flags %#x", id, flags)
			}
		}
		return nil
	}
	return leaves, pageSize, walk(root)
}

// OnlyLeafWith returns the leaf among leaves that holds key and only keys that start
// with prefix, or false.
func OnlyLeafWith(leaves []Leaf, prefix, key []byte) (Leaf, bool) {
	for _, l := range leaves {
		has := false
		for _, k := range l.Keys {
			if !bytes.HasPrefix(k, prefix) {
				has = false
				break
			}
			has = has || bytes.Equal(k, key)
		}
		if has {
			return l, true
		}
	}
	return Leaf{}, false
}

// DamagePage overwrites page id of the file at path with garbage, as a bad sector or
// a torn write would leave it, and syncs it. bbolt panics when it reaches that page.
// It returns the page's bytes as they were.
func DamagePage(path string, id uint64, pageSize int) (was []byte, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off := int64(id) * int64(pageSize)
	was = make([]byte, pageSize)
	if _, err := f.ReadAt(was, off); err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, pageSize/4), off); err != nil {
		return nil, err
	}
	return was, f.Sync()
}

// ScramblePage keeps the header of page id of the file at path (its id and type stay
// right) but points every element's key and value at the end of the file, inside the
// memory bbolt maps for it (the file's size rounded up to a power of two, at least
// 32 KiB: go.etcd.io/bbolt/db.go mmapSize), where reading is a SIGBUS: a memory fault,
// not a panic, unless the reader has asked for panics on faults. When the file's size
// is a power of two it adds a page of zeros, so that the mapping runs past it. It syncs
// the file and returns the page as it was. Faults happen only until the file grows.
func ScramblePage(path string, id uint64, pageSize int) (was []byte, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	mapped := int64(32 << 10)
	for mapped < size {
		mapped *= 2
	}
	if mapped == size {
		size += int64(pageSize)
		if err := f.Truncate(size); err != nil {
			return nil, err
		}
	}
	off := int64(id) * int64(pageSize)
	was = make([]byte, pageSize)
	if _, err := f.ReadAt(was, off); err != nil {
		return nil, err
	}
	p := make([]byte, pageSize)
	copy(p, was[:pageHeaderSize])
	count := (pageSize - pageHeaderSize) / pageElemSize
	binary.LittleEndian.PutUint16(p[10:], uint16(count))
	for i := range count {
		// pos counts from the element; the key (64 bytes) then starts at the end of the
		// file. A leaf element is flags, pos, ksize, vsize; a branch one pos, ksize, pgid.
		e := p[pageHeaderSize+i*pageElemSize:]
		pos := uint32(size - off - int64(pageHeaderSize+i*pageElemSize))
		if was[8]&pageBranch != 0 {
			binary.LittleEndian.PutUint32(e, pos)
			binary.LittleEndian.PutUint32(e[4:], 64)
			continue
		}
		binary.LittleEndian.PutUint32(e[4:], pos)
		binary.LittleEndian.PutUint32(e[8:], 64)
		binary.LittleEndian.PutUint32(e[12:], 64)
	}
	if _, err := f.WriteAt(p, off); err != nil {
		return nil, err
	}
	return was, f.Sync()
}
