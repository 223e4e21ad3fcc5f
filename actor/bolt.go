package actor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

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
//
// A damaged file is contained per sandbox: a sandbox whose records bbolt cannot read
// fails with a *CorruptError and the rest are served (see bolt_damage.go).
type BoltStore struct {
	db     *bolt.DB
	damage damageSet

	mu      sync.Mutex // protects following
	pending []*pendingWrite
	closed  bool
	unknown map[string][]chan struct{} // writes given up while queued, per sandbox (bolt_outcome.go)

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
// It walks every sandbox's records once and logs (to slog.Default) those it cannot
// read; [BoltStore.Damaged] returns them. A file that cannot be opened at all, such as
// one whose two meta pages are both damaged, is an error matching ErrCorrupt that
// names the file and what to do.
func OpenBolt(path string) (*BoltStore, error) { return openBolt(path, slog.Default()) }

func openBolt(path string, log *slog.Logger) (*BoltStore, error) {
	s := &BoltStore{kick: make(chan struct{}, 1), done: make(chan struct{})}
	s.damage.path, s.damage.log = path, log
	db, damaged, err := openContained(path)
	if damaged != "" {
		return nil, unopenable(path, damaged)
	}
	if err != nil {
		return nil, fmt.Errorf("actor: failed to open storage %s: %w", path, err)
	}
	s.db = db
	damaged, err = s.update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketData, bucketIndex, bucketEpochs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || damaged != "" {
		_ = db.Close()
		if damaged != "" {
			return nil, unopenable(path, damaged)
		}
		return nil, fmt.Errorf("actor: failed to create buckets in %s: %w", path, err)
	}
	s.checkAll()
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
func (s *BoltStore) Read(ctx context.Context, sandbox string, fn func(r Reader) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.settle(ctx, sandbox); err != nil {
		return err
	}
	if err := s.damage.get(sandbox); err != nil {
		return err
	}
	r := &boltReader{pfx: dataKey(sandbox, nil)}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		// A fault outside the cursor steps (fn reading a value whose damaged length
		// runs past the file) is damage too; any other panic is fn's own.
		if p := recover(); p != nil {
			if !isFault(p) {
				panic(p)
			}
			err = s.damage.mark(sandbox, panicDetail(p))
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		r.c = tx.Bucket(bucketData).Cursor()
		return fn(r)
	})
	if r.broken != "" {
		return s.damage.mark(sandbox, r.broken)
	}
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Sandboxes implements Storage. A sandbox whose records cannot be read is skipped, as
// its Read and Write fail; a damaged sandbox index ends the walk with an error matching
// ErrCorrupt after the sandboxes before the damaged page (bolt_damage.go).
func (s *BoltStore) Sandboxes(ctx context.Context, key []byte, fn func(id string, val []byte) error) error {
	return s.SandboxesAfter(ctx, key, "", fn)
}

// SandboxesAfter implements SandboxPager: Sandboxes from the first id after after.
func (s *BoltStore) SandboxesAfter(ctx context.Context, key []byte, after string, fn func(id string, val []byte) error) error {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var broken string
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketData)
		ids := &boltReader{c: tx.Bucket(bucketIndex).Cursor()}
		var k []byte
		if after == "" {
			k, _ = ids.first()
		} else if k, _ = ids.seekIn([]byte(after), span{}); string(k) == after {
			k, _ = ids.nextIn(span{})
		}
		for ; k != nil; k, _ = ids.nextIn(span{}) {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := string(k)
			if s.damage.get(id) != nil {
				continue
			}
			var v []byte
			if key != nil {
				var damaged string
				if v, damaged = getContained(data, dataKey(id, key)); damaged != "" {
					s.damage.mark(id, damaged)
					continue
				}
			}
			if err := fn(id, v); err != nil {
				return err
			}
		}
		broken = ids.broken
		return nil
	})
	if err == nil && broken != "" {
		return s.damage.mark("", broken)
	}
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
	if err := s.damage.get(b.Sandbox); err != nil {
		return err
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
		return s.gaveUp(ctx, w)
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
	damaged, err := s.update(func(tx *bolt.Tx) error {
		for _, w := range group {
			w.err = applyBatch(tx, w.b)
			if w.err != nil && !errors.Is(w.err, ErrFenced) {
				return w.err
			}
		}
		return nil
	})
	if err != nil || damaged != "" {
		// One batch broke the transaction (or walked into a damaged page, and bbolt
		// rolled it back); retry each alone so one bad batch cannot fail the others.
		for _, w := range group {
			if damaged, w.err = s.update(func(tx *bolt.Tx) error { return applyBatch(tx, w.b) }); damaged != "" {
				w.err = s.damage.mark(w.b.Sandbox, damaged)
			}
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
		for k := seekWithin(c, pfx); k != nil && bytes.HasPrefix(k, pfx); k = seekWithin(c, pfx) {
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
