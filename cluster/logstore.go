package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// logStore is raft's log and stable store in one bbolt file, the design of
// hashicorp/raft-boltdb on go.etcd.io/bbolt, as nodes kept it before the WAL
// (wal.go). It remains to read a data directory of those builds, which Open
// migrates (wal_migrate.go), and as the baseline of the write benchmarks
// (Config.boltLog). raft-boltdb v1 sits on the archived github.com/boltdb/bolt,
// whose unaligned pointer casts abort under the race detector's checkptr
// (Bucket.write), and raft-boltdb/v2 does not build with raft v1.8 here.
//
// Keys are big-endian indexes, so the log bucket's cursor order is index order.
// Every write is one bbolt transaction, which syncs twice (pages, then meta).
type logStore struct {
	db *bolt.DB
	// delay is a test hook, a slow disk: while above zero, each StoreLogs first
	// pauses for a time drawn from [delay/10, delay] nanoseconds.
	delay atomic.Int64
}

var (
	_ raft.LogStore    = (*logStore)(nil)
	_ raft.StableStore = (*logStore)(nil)

	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")
)

// errKeyNotFound must read exactly "not found": raft compares the message of a
// stable store's error to that string to tell a fresh store from a broken one.
var errKeyNotFound = errors.New("not found")

func openLogStore(path string) (*logStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("failed to open raft store: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketConf} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("failed to open raft store: %w", err)
	}
	return &logStore{db: db}, nil
}

func (s *logStore) Close() error { return s.db.Close() }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// FirstIndex returns the first stored index, 0 when empty.
func (s *logStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex returns the last stored index, 0 when empty.
func (s *logStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads the entry at index into l.
func (s *logStore) GetLog(index uint64, l *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(u64(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decodeLog(v, l)
	})
}

// StoreLog stores one entry.
func (s *logStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one transaction.
func (s *logStore) StoreLogs(logs []*raft.Log) error {
	if d := s.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d/10 + rand.Int64N(d-d/10+1)))
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(u64(l.Index), encodeLog(l)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange deletes entries min..max inclusive.
func (s *logStore) DeleteRange(lo, hi uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(u64(lo)); k != nil && binary.BigEndian.Uint64(k) <= hi; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set stores a stable key.
func (s *logStore) Set(k, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketConf).Put(k, v) })
}

// Get reads a stable key; a missing one is errKeyNotFound.
func (s *logStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetUint64 stores a stable counter.
func (s *logStore) SetUint64(k []byte, v uint64) error { return s.Set(k, u64(v)) }

// GetUint64 reads a stable counter.
func (s *logStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	return stableUint64(k, v, err)
}

// stableUint64 decodes the counter a stable store's Get returned for k.
func stableUint64(k, v []byte, err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: stable key %q has %d bytes", ErrCorrupt, k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func encodeLog(l *raft.Log) []byte {
	return appendLog(make([]byte, 0, 32+len(l.Data)+len(l.Extensions)), l)
}

// appendLog appends l's encoding (index, term, type, data, extensions, appended
// at) to b: the value of a bbolt log key and the payload of a WAL record.
func appendLog(b []byte, l *raft.Log) []byte {
	e := encoder{b: b}
	e.uvarint(l.Index)
	e.uvarint(l.Term)
	e.byte(byte(l.Type))
	e.bytes(l.Data)
	e.bytes(l.Extensions)
	e.uvarint(uint64(l.AppendedAt.UnixNano()))
	return e.b
}

func decodeLog(b []byte, l *raft.Log) error {
	d := decoder{b: b}
	l.Index = d.uvarint()
	l.Term = d.uvarint()
	l.Type = raft.LogType(d.byte())
	l.Data = d.bytes()
	l.Extensions = d.bytes()
	l.AppendedAt = time.Unix(0, int64(d.uvarint()))
	return d.done()
}

// slowDisk returns the slow-disk test hook.
func (s *logStore) slowDisk() *atomic.Int64 { return &s.delay }
