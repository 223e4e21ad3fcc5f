package actor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket layout of the bbolt store. Records live flat in one bucket under
// "<sandbox>\x00<key>" (sandbox ids never hold a NUL), which packs a small sandbox into
// a few hundred bytes instead of a nested bucket's page, so 100,000 passivated sandboxes
// stay small on disk and in the page cache.
var (
	bucketData   = []byte("d") // sandbox\x00key → value
	bucketIndex  = []byte("i") // sandbox → "" for every sandbox with records
	bucketEpochs = []byte("e") // sandbox → big-endian uint64 highest accepted epoch
)

// BoltStore is a Storage on one bbolt file. Concurrent Writes are committed together by
// one committer goroutine: while one transaction syncs, the next batches queue up and go
// into the following transaction (group commit). All methods are safe for concurrent use.
type BoltStore struct {
	db *bolt.DB

	mu      sync.Mutex // protects following
	pending []*pendingWrite
	closed  bool

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

type pendingWrite struct {
	b   *Batch
	err error
	ch  chan struct{}
}

var _ Storage = (*BoltStore)(nil)

// OpenBolt opens (creating if needed) a bbolt store at path and starts its committer.
func OpenBolt(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("actor: failed to open storage: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketData, bucketIndex, bucketEpochs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("actor: failed to create buckets: %w", err)
	}
	s := &BoltStore{db: db, kick: make(chan struct{}, 1), done: make(chan struct{})}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

func dataKey(sandbox string, key []byte) []byte {
	k := make([]byte, 0, len(sandbox)+1+len(key))
	k = append(k, sandbox...)
	k = append(k, 0)
	return append(k, key...)
}

// Read implements Storage.
func (s *BoltStore) Read(ctx context.Context, sandbox string, fn func(r Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		return fn(&boltReader{c: tx.Bucket(bucketData).Cursor(), pfx: dataKey(sandbox, nil)})
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

type boltReader struct {
	c   *bolt.Cursor
	pfx []byte
}

func (r *boltReader) Get(key []byte) []byte {
	full := append(r.pfx[:len(r.pfx):len(r.pfx)], key...)
	k, v := r.c.Seek(full)
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
	for k, v := r.c.Seek(start); k != nil && bytes.HasPrefix(k, p); k, v = r.c.Next() {
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
		k, v = r.c.Last()
	} else if k, _ = r.c.Seek(end); k == nil {
		k, v = r.c.Last()
	} else {
		k, v = r.c.Prev()
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

// Sandboxes implements Storage.
func (s *BoltStore) Sandboxes(ctx context.Context, key []byte, fn func(id string, val []byte) error) error {
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketData)
		return tx.Bucket(bucketIndex).ForEach(func(id, _ []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var v []byte
			if key != nil {
				v = data.Get(dataKey(string(id), key))
			}
			return fn(string(id), v)
		})
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Write implements Storage: the batch joins the next group commit.
func (s *BoltStore) Write(ctx context.Context, b *Batch) error {
	if b.empty() {
		return nil
	}
	if b.Sandbox == "" || bytes.IndexByte([]byte(b.Sandbox), 0) >= 0 {
		return fmt.Errorf("%w: bad sandbox id %q", ErrInvalid, b.Sandbox)
	}
	w := &pendingWrite{b: b, ch: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pending = append(s.pending, w)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	select {
	case <-w.ch:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *BoltStore) commitLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.kick:
		case <-s.done:
			s.commitPending() // writes queued before Close still commit
			return
		}
		s.commitPending()
	}
}

func (s *BoltStore) commitPending() {
	s.mu.Lock()
	group := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(group) == 0 {
		return
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, w := range group {
			w.err = applyBatch(tx, w.b)
			if w.err != nil && !errors.Is(w.err, ErrFenced) {
				return w.err
			}
		}
		return nil
	})
	if err != nil {
		// One batch broke the transaction; retry each alone so one bad batch cannot
		// fail the others.
		for _, w := range group {
			w.err = s.db.Update(func(tx *bolt.Tx) error { return applyBatch(tx, w.b) })
		}
	}
	for _, w := range group {
		if w.err != nil && !errors.Is(w.err, ErrFenced) {
			w.err = fmt.Errorf("actor: failed to commit: %w", w.err)
		}
		close(w.ch)
	}
}

// applyBatch checks b's epoch and applies it. A fenced batch changes nothing.
func applyBatch(tx *bolt.Tx, b *Batch) error {
	epochs := tx.Bucket(bucketEpochs)
	id := []byte(b.Sandbox)
	var stored uint64
	v := epochs.Get(id)
	if len(v) == 8 {
		stored = binary.BigEndian.Uint64(v)
	}
	if b.Epoch < stored {
		return fmt.Errorf("%w: sandbox %q epoch %d < %d", ErrFenced, b.Sandbox, b.Epoch, stored)
	}
	if v == nil || b.Epoch > stored {
		if err := epochs.Put(id, binary.BigEndian.AppendUint64(nil, b.Epoch)); err != nil {
			return err
		}
	}
	data := tx.Bucket(bucketData)
	index := tx.Bucket(bucketIndex)
	if b.DeleteSandbox {
		pfx := dataKey(b.Sandbox, nil)
		c := data.Cursor()
		for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Seek(pfx) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		if err := index.Delete(id); err != nil {
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
		if err := data.Put(k, op.Value); err != nil {
			return err
		}
		puts = true
	}
	if puts {
		return index.Put(id, []byte{})
	}
	return nil
}

// Close stops the committer after committing queued writes and closes the file. It is
// idempotent.
func (s *BoltStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
	return s.db.Close()
}
