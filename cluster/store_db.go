package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// stateDB is the FSM's database of sandbox records: one bbolt file, DataDir/raft/
// state.db, opened with NoSync. The raft log is the durable copy; this file is the
// applied state, and it records the index of the last cmdBatches entry it applied
// in the same transaction as the entry's records, so a replay after a restart skips
// what it already holds (see the package doc, "Sandbox records").
//
// Layout, like the actor's own bbolt store: records flat in one bucket under
// "sandbox NUL key", which keeps a small sandbox to a few hundred bytes; an index
// bucket sandbox → "" of every sandbox with records; and a meta bucket.
//
// Concurrency: one goroutine writes at a time: the writer of store_writer.go
// (applyRun), or raft's FSM goroutine while the writer is idle (replace). Readers
// (Node.Read, Node.Sandboxes, snapshots) run concurrently in read transactions under
// mu's read lock; replace takes the write lock to swap the file.
type stateDB struct {
	path    string
	boot    string       // this boot's id (bootID)
	mu      sync.RWMutex // guards db against the swap in replace and close
	db      *bolt.DB
	applied atomic.Uint64 // the index of the last cmdBatches entry in the file

	changed changeSignal // broadcast when applied moves

	wb writeBehind // the FSM's judged runs on their way into the file (store_writer.go)
}

var (
	bucketData  = []byte("d") // sandbox NUL key → value
	bucketIndex = []byte("i") // sandbox → "" for every sandbox with records
	bucketMeta  = []byte("m") // keyApplied → big-endian uint64, keyBoot, keyClean
	keyApplied  = []byte("applied")
	keyBoot     = []byte("boot")  // the boot id of the machine that last opened the file
	keyClean    = []byte("clean") // "1" after a Close, "" while open
)

// stateMmapSize is the initial mmap of the state file. bbolt remaps to grow only
// once every read transaction has ended, so a large initial map keeps a snapshot's
// long read transaction from stalling Apply while the file grows. It is address
// space, not memory.
const stateMmapSize = 256 << 20

// openStateDB opens the state file at path. A file that was not closed and was
// last opened before the machine restarted may have lost pages it wrote without
// fsync (an OS crash or a power loss, not a process crash: the kernel keeps the
// pages of a killed process). It is removed, and raft rebuilds it from its latest
// snapshot and the log (Restore takes any snapshot into an empty file). Without a
// boot id (not Linux) every unclean stop counts as such a restart.
func openStateDB(path string) (*stateDB, error) {
	s := &stateDB{path: path, boot: bootID()}
	if torn, err := tornByRestart(path, s.boot); err != nil {
		return nil, err
	} else if torn {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("failed to remove state db torn by a restart: %w", err)
		}
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	s.start()
	return s, nil
}

// bootID returns this boot's id, "" where the system does not say.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// tornByRestart reports whether the file at path was left open (not closed by
// close) by a boot other than boot.
func tornByRestart(path, boot string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return true, nil // unreadable: rebuild it
	}
	defer db.Close()
	torn := false
	err = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || m.Get(keyBoot) == nil {
			return nil // never opened by this version
		}
		torn = string(m.Get(keyClean)) != "1" && (boot == "" || string(m.Get(keyBoot)) != boot)
		return nil
	})
	return torn, err
}

// open opens the file, creates the buckets and marks it open by this boot, synced
// before anything is written without sync.
func (s *stateDB) open() error {
	// NoFreelistSync: one page less to write per transaction; the free list is
	// rebuilt by scanning the file at open.
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{
		Timeout: time.Second, NoSync: true, InitialMmapSize: stateMmapSize,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return fmt.Errorf("failed to open state db: %w", err)
	}
	var applied uint64
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketData, bucketIndex, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		applied = readApplied(tx)
		m := tx.Bucket(bucketMeta)
		return errors.Join(m.Put(keyBoot, []byte(s.boot)), m.Put(keyClean, nil))
	})
	if err == nil {
		err = db.Sync()
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("failed to open state db: %w", err)
	}
	s.db = db
	s.setApplied(applied)
	return nil
}

func readApplied(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bucketMeta).Get(keyApplied); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (s *stateDB) setApplied(i uint64) {
	s.applied.Store(i)
	s.changed.broadcast()
}

// waitApplied waits until the file holds index i, or ctx or done ends.
func (s *stateDB) waitApplied(ctx context.Context, done <-chan struct{}, i uint64) error {
	s.wb.waiters.Add(1) // the writer does not linger while someone waits
	defer s.wb.waiters.Add(-1)
	s.urgeWrite()
	return s.changed.until(ctx, done, func() (bool, error) { return s.applied.Load() >= i, nil })
}

func dataKey(sandbox string, key []byte) []byte {
	k := make([]byte, 0, len(sandbox)+1+len(key))
	k = append(k, sandbox...)
	k = append(k, 0)
	return append(k, key...)
}

// applyGroup writes the batches the FSM accepted (verdict batchApplied) and the
// entry's index in one transaction, and returns the ids of the sandboxes it changed.
// An entry at or below the file's applied index is already in it (a replay after a
// restart) and changes nothing.
func (s *stateDB) applyGroup(index uint64, bs []*Batch, vs []batchVerdict) ([]string, error) {
	return s.applyRun([]runEntry{{index: index, bs: bs, vs: vs}})
}

// applyRun writes the accepted batches of a run of entries, in log order, and the
// index of the last one in one transaction, and returns the ids of the sandboxes it
// changed (a sandbox may be named more than once). Entries at or below the file's
// applied index are already in it (a replay after a restart) and are skipped.
func (s *stateDB) applyRun(es []runEntry) ([]string, error) {
	applied := s.applied.Load()
	for len(es) > 0 && es[0].index <= applied {
		es = es[1:]
	}
	if len(es) == 0 {
		return nil, nil
	}
	last := es[len(es)-1].index
	var changed []string
	s.mu.RLock() // only replace, on this same goroutine, takes the write lock
	err := s.db.Update(func(tx *bolt.Tx) error {
		data, idx := tx.Bucket(bucketData), tx.Bucket(bucketIndex)
		for _, e := range es {
			for i, b := range e.bs {
				if e.vs[i].code != batchApplied {
					continue
				}
				if err := putBatch(data, idx, b); err != nil {
					return err
				}
				if len(changed) == 0 || changed[len(changed)-1] != b.Sandbox {
					changed = append(changed, b.Sandbox)
				}
			}
		}
		return tx.Bucket(bucketMeta).Put(keyApplied, u64(last))
	})
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("failed to apply batches at indexes %d-%d: %w", es[0].index, last, err)
	}
	s.setApplied(last)
	return changed, nil
}

// putBatch applies one batch: DeleteSandbox first, then the ops in order.
func putBatch(data, idx *bolt.Bucket, b *Batch) error {
	id := []byte(b.Sandbox)
	if b.DeleteSandbox {
		pfx := dataKey(b.Sandbox, nil)
		c := data.Cursor()
		for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Seek(pfx) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		if err := idx.Delete(id); err != nil {
			return err
		}
	}
	puts := false
	for _, op := range b.Ops {
		k := dataKey(b.Sandbox, op.Key)
		if op.Delete {
			if err := data.Delete(k); err != nil {
				return err
			}
			continue
		}
		v := op.Value
		if v == nil {
			v = []byte{} // bbolt stores nil as empty; say so
		}
		if err := data.Put(k, v); err != nil {
			return err
		}
		puts = true
	}
	if puts && idx.Get(id) == nil {
		// A Put dirties the index's page even when the key is there; most batches
		// write to a sandbox that already has records.
		return idx.Put(id, []byte{})
	}
	return nil
}

// view runs fn in a read transaction.
func (s *stateDB) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	err := s.db.View(fn)
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// begin starts a read transaction that outlives the call (a snapshot's); release
// ends it. The file cannot be replaced until then.
func (s *stateDB) begin() (tx *bolt.Tx, release func(), err error) {
	s.mu.RLock()
	tx, err = s.db.Begin(false)
	if err != nil {
		s.mu.RUnlock()
		return nil, nil, fmt.Errorf("failed to begin snapshot: %w", err)
	}
	var once sync.Once
	return tx, func() {
		once.Do(func() {
			_ = tx.Rollback()
			s.mu.RUnlock()
		})
	}, nil
}

// replace makes the bbolt image of size bytes read from r, which must end there,
// the state file: written beside it and synced, then renamed over it, so a crash
// leaves the old file or the new one. A short or long image changes nothing.
func (s *stateDB) replace(r io.Reader, size int64) error {
	tmp := s.path + ".restore"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.CopyN(f, r, size)
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: state file shorter than %d bytes", ErrCorrupt, size)
	}
	if err == nil {
		if n, _ := io.Copy(io.Discard, r); n != 0 {
			err = fmt.Errorf("%w: %d bytes after the state file", ErrCorrupt, n)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return s.open()
}

// close writes what is queued, stops the writer, marks the file closed cleanly,
// syncs and closes it. The FSM goroutine has stopped by then. (A failed write was
// reported by the FSM already; the file holds exactly what its index says.)
func (s *stateDB) close() error {
	_ = s.stopWriter()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyClean, []byte("1")) })
	return errors.Join(err, s.db.Sync(), s.db.Close())
}
