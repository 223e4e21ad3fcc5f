package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// raftStore is raft's log and stable store as a Node holds it: the WAL, or the
// bbolt store that benchmarks compare it with.
type raftStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
	slowDisk() *atomic.Int64
}

// The raft store's names in DataDir/raft.
const (
	walDir      = "wal"
	boltLogName = "raft.db"
	migratedExt = ".migrated"
)

// migrateBatch bounds the bytes of entries copied with one append.
const migrateBatch = 4 << 20

// openRaftStore opens the raft log and stable store in dir (DataDir/raft): the
// WAL in dir/wal, created on first use. A data directory from a build that kept
// raft's log in bbolt (dir/raft.db) is migrated first:
//
//  1. A WAL is built in dir/wal.tmp from every entry and stable key of raft.db,
//     each append synced.
//  2. wal.tmp is renamed to wal and dir synced: from here on the WAL is the store.
//  3. raft.db is renamed to raft.db.migrated and dir synced.
//
// A crash before step 2 leaves raft.db the store (wal.tmp is rebuilt); a crash
// after it leaves step 3 to the next open. With boltLog set (benchmarks), it
// opens dir/raft.db as it is.
func openRaftStore(dir string, log *slog.Logger, boltLog bool) (raftStore, error) {
	bolted := filepath.Join(dir, boltLogName)
	if boltLog {
		return openLogStore(bolted)
	}
	final := filepath.Join(dir, walDir)
	if _, err := os.Stat(final); errors.Is(err, fs.ErrNotExist) {
		if err := buildWAL(dir, log); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("failed to open raft log: %w", err)
	}
	if err := retireBolt(dir); err != nil {
		return nil, err
	}
	return openWAL(final, log, 0)
}

// buildWAL creates dir/wal, with raft.db's contents when there is one.
func buildWAL(dir string, log *slog.Logger) (err error) {
	tmp := filepath.Join(dir, walDir+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("failed to remove an unfinished raft log: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("failed to create raft log: %w", err)
	}
	w, err := openWAL(tmp, log, 0)
	if err != nil {
		return err
	}
	bolted := filepath.Join(dir, boltLogName)
	if _, err := os.Stat(bolted); err == nil {
		if err := copyBolt(bolted, w); err != nil {
			w.Close()
			return fmt.Errorf("failed to migrate %s: %w", bolted, err)
		}
		first, _ := w.FirstIndex()
		last, _ := w.LastIndex()
		log.Info("cluster: raft log migrated from bbolt to the WAL", "from", bolted, "first", first, "last", last)
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, walDir)); err != nil {
		return fmt.Errorf("failed to create raft log: %w", err)
	}
	return syncDir(dir)
}

// copyBolt appends every entry of the bbolt store at path to w, in batches, and
// sets its stable keys in w.
func copyBolt(path string, w *wal) error {
	s, err := openLogStore(path)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.db.View(func(tx *bolt.Tx) error {
		var batch []*raft.Log
		size := 0
		flush := func() error {
			err := w.StoreLogs(batch)
			batch, size = batch[:0], 0
			return err
		}
		c := tx.Bucket(bucketLogs).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			l := new(raft.Log)
			if err := decodeLog(v, l); err != nil {
				return err
			}
			batch, size = append(batch, l), size+len(v)
			if size >= migrateBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		return tx.Bucket(bucketConf).ForEach(func(k, v []byte) error { return w.Set(k, v) })
	})
}

// retireBolt renames a migrated raft.db out of the way.
func retireBolt(dir string) error {
	bolted := filepath.Join(dir, boltLogName)
	if _, err := os.Stat(bolted); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.Rename(bolted, bolted+migratedExt); err != nil {
		return fmt.Errorf("failed to retire the migrated raft log: %w", err)
	}
	return syncDir(dir)
}

// dropLogBelowSnapshot deletes a log that ends below the latest snapshot. raft
// deletes a monotonic store's whole log after it installs a leader's snapshot
// (see wal.IsMonotonic); a crash between the two leaves entries that the snapshot
// covers, and raft would append the entries after the snapshot past a gap, which
// the WAL refuses. Deleting them is what raft was about to do.
func dropLogBelowSnapshot(store raftStore, snaps raft.SnapshotStore, log *slog.Logger) error {
	if m, ok := store.(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		return nil
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	first, err := store.FirstIndex()
	if err != nil {
		return err
	}
	last, err := store.LastIndex()
	if err != nil || last == 0 || last >= metas[0].Index {
		return err
	}
	log.Warn("cluster: deleting a raft log that ends below the latest snapshot",
		"first", first, "last", last, "snapshot", metas[0].Index)
	return store.DeleteRange(first, last)
}
