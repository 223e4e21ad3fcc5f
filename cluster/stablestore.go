package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/raft"
)

// stableName is the stable store's file in the WAL directory.
const stableName = "stable"

// stableStore is raft's StableStore as one small file of every key and value,
// rewritten whole on each Set: written to a temporary file, synced, renamed over
// the old one and the directory synced, so a crash leaves the old contents or the
// new ones. raft sets keys on elections and votes only (CurrentTerm, LastVoteTerm,
// LastVoteCand), so the rewrite costs nothing on the write path.
//
// Concurrency: safe for concurrent use.
type stableStore struct {
	dir string
	mu  sync.Mutex
	kv  map[string][]byte
}

var _ raft.StableStore = (*stableStore)(nil)

// openStable reads the stable store of dir; a missing file is an empty store.
func openStable(dir string) (*stableStore, error) {
	s := &stableStore{dir: dir, kv: map[string][]byte{}}
	b, err := os.ReadFile(filepath.Join(dir, stableName))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read raft stable store: %w", err)
	}
	if s.kv, err = decodeStable(b); err != nil {
		return nil, fmt.Errorf("%w: raft stable store %s: %v", ErrCorrupt, filepath.Join(dir, stableName), err)
	}
	return s, nil
}

// Set stores a key durably.
func (s *stableStore) Set(k, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv := make(map[string][]byte, len(s.kv)+1)
	for key, val := range s.kv {
		kv[key] = val
	}
	kv[string(k)] = append([]byte(nil), v...)
	if err := writeFileAtomic(s.dir, stableName, encodeStable(kv)); err != nil {
		return fmt.Errorf("failed to write raft stable store: %w", err)
	}
	s.kv = kv
	return nil
}

// Get reads a key; a missing one is errKeyNotFound.
func (s *stableStore) Get(k []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(k)]
	if !ok {
		return nil, errKeyNotFound
	}
	return append([]byte(nil), v...), nil
}

// SetUint64 stores a counter.
func (s *stableStore) SetUint64(k []byte, v uint64) error { return s.Set(k, u64(v)) }

// GetUint64 reads a counter.
func (s *stableStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	return stableUint64(k, v, err)
}

// encodeStable writes the pairs in key order, then a CRC-32C of all before it.
func encodeStable(kv map[string][]byte) []byte {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e := encoder{}
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.bytes(kv[k])
	}
	return binary.LittleEndian.AppendUint32(e.b, crc32c(e.b))
}

func decodeStable(b []byte) (map[string][]byte, error) {
	if len(b) < 4 || crc32c(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("CRC mismatch")
	}
	d := decoder{b: b[:len(b)-4]}
	n := d.count()
	kv := make(map[string][]byte, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string()
		kv[k] = d.bytes()
	}
	return kv, d.done()
}

// writeFileAtomic replaces dir/name with data: a temporary file written and
// synced, renamed over name, then the directory synced.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}
