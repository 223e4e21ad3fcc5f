package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// defaultSegmentSize is the size past which the WAL starts a new segment file.
const defaultSegmentSize = 64 << 20

// wal is raft's log store as segment files of framed records, with the stable
// store beside it (why it is not bbolt: the package doc, Deviations; the design
// and the crash rules at length: docs/raftlog.md).
//
//  1. StoreLogs encodes a whole batch, writes it with one write at the end of the
//     last segment and makes it durable with one fdatasync. A segment that would
//     grow past the size limit is closed and a new one, named by the batch's first
//     index, takes the batch; only then is the directory synced as well.
//  2. GetLog finds an entry's record through an index of offsets kept in memory
//     and reads it with one pread, checking its CRC. raft.LogCache sits in front.
//  3. DeleteRange drops the head (after a snapshot) or the tail (a conflict on a
//     follower). The head's new first index is written to the file "first" before
//     any segment is removed, so a crash between the two, or a segment only partly
//     below the first index, still reads right. The tail is cut with ftruncate.
//  4. Opening scans every segment (wal_recover.go).
//
// Concurrency: every method is safe for concurrent use. raft calls StoreLogs and
// DeleteRange from its main goroutine and log compaction from its snapshot
// goroutine, and GetLog from every replication goroutine. Writers take wmu for
// the whole call, I/O included; readers take mu's read lock, which a writer takes
// only to publish a change in memory, never across an fsync.
type wal struct {
	dir     string
	log     *slog.Logger
	segSize int64
	*stableStore
	// delay is a test hook, a slow disk: while above zero, each StoreLogs first
	// pauses for a time drawn from [delay/10, delay] nanoseconds.
	delay atomic.Int64

	wmu sync.Mutex // serialises StoreLogs, DeleteRange and Close
	buf []byte     // the batch being encoded; under wmu
	// broken, under wmu, is the error of a write or deletion that failed half-way:
	// the files may no longer match the index in memory, so nothing more is
	// written; a reopen recovers from the files.
	broken error

	mu     sync.RWMutex // guards what follows; written only under wmu too
	segs   []*segment   // in index order, none empty, indexes consecutive
	first  uint64       // entries below it are deleted (the file "first"); 0: none
	closed bool
}

var (
	_ raft.LogStore          = (*wal)(nil)
	_ raft.StableStore       = (*wal)(nil)
	_ raft.MonotonicLogStore = (*wal)(nil)
)

// IsMonotonic reports true: the WAL refuses a gap, so raft, having installed a
// snapshot past the end of the log, deletes the whole log before it appends the
// entries after the snapshot, instead of keeping trailing entries below a gap.
func (w *wal) IsMonotonic() bool { return true }

// FirstIndex returns the first stored index, 0 when empty.
func (w *wal) FirstIndex() (uint64, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.firstLocked(), nil
}

// LastIndex returns the last stored index, 0 when empty.
func (w *wal) LastIndex() (uint64, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lastLocked(), nil
}

func (w *wal) firstLocked() uint64 {
	if len(w.segs) == 0 {
		return 0
	}
	return max(w.first, w.segs[0].base)
}

func (w *wal) lastLocked() uint64 {
	if len(w.segs) == 0 {
		return 0
	}
	return w.segs[len(w.segs)-1].last()
}

// GetLog reads the entry at index into l.
func (w *wal) GetLog(index uint64, l *raft.Log) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	if len(w.segs) == 0 || index < w.firstLocked() || index > w.lastLocked() {
		return raft.ErrLogNotFound
	}
	k := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].base > index }) - 1
	return w.segs[k].read(index, l)
}

// StoreLog stores one entry.
func (w *wal) StoreLog(l *raft.Log) error { return w.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must continue the log's indexes, with one
// write and one fdatasync.
func (w *wal) StoreLogs(logs []*raft.Log) error {
	if d := w.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d/10 + rand.Int64N(d-d/10+1)))
	}
	if len(logs) == 0 {
		return nil
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usableLocked(); err != nil {
		return fmt.Errorf("failed to append to raft log: %w", err)
	}
	if err := w.storeLocked(logs); err != nil {
		return fmt.Errorf("failed to append to raft log: %w", err)
	}
	return nil
}

// usableLocked returns why nothing can be written, if anything.
func (w *wal) usableLocked() error {
	if w.closed {
		return ErrClosed
	}
	if w.broken != nil {
		return fmt.Errorf("an earlier write failed half-way: %w", w.broken)
	}
	return nil
}

func (w *wal) storeLocked(logs []*raft.Log) error {
	next := logs[0].Index
	for i, l := range logs {
		if l.Index != next+uint64(i) {
			return fmt.Errorf("%w: index %d follows %d in one batch", errWALOrder, l.Index, logs[i-1].Index)
		}
	}
	if len(w.segs) > 0 && next != w.lastLocked()+1 {
		return fmt.Errorf("%w: index %d after last index %d", errWALOrder, next, w.lastLocked())
	}
	if len(w.segs) == 0 && next != w.first {
		// An empty log takes any first index (a new log, or one emptied by a
		// snapshot or a conflict); it is recorded first so that a head segment
		// lost later is seen as a gap.
		if err := writeFirst(w.dir, next); err != nil {
			return err
		}
		w.mu.Lock()
		w.first = next
		w.mu.Unlock()
	}
	buf := w.buf[:0]
	offs := make([]int64, len(logs))
	for i, l := range logs {
		offs[i] = int64(len(buf))
		buf = appendRecord(buf, l)
	}
	if cap(buf) <= 1<<20 {
		w.buf = buf // keep a batch buffer of normal size for the next call
	}
	seg, fresh := w.tail(), false
	if seg == nil || seg.size > 0 && seg.size+int64(len(buf)) > w.segSize {
		var err error
		if seg, err = createSegment(w.dir, next); err != nil {
			return err
		}
		fresh = true
	}
	if err := w.writeSyncLocked(seg, buf, fresh); err != nil {
		return err
	}
	for i := range offs {
		offs[i] += seg.size
	}
	w.mu.Lock()
	if fresh {
		w.segs = append(w.segs, seg)
	}
	seg.offs = append(seg.offs, offs...)
	seg.size += int64(len(buf))
	w.mu.Unlock()
	return nil
}

// writeSyncLocked writes buf at the end of seg and syncs it. A failed write is
// undone (the bytes cut off, a fresh segment removed) and the next append may try
// again; a failed sync is not, since what the file then holds is unknown, and the
// WAL stops writing (wal.broken).
func (w *wal) writeSyncLocked(seg *segment, buf []byte, fresh bool) error {
	var err error
	if _, err = seg.f.WriteAt(buf, seg.size); err != nil {
		err = fmt.Errorf("failed to write raft log segment: %w", err)
		if fresh {
			if rerr := seg.remove(); rerr != nil {
				w.broken = err
			}
		} else if terr := seg.f.Truncate(seg.size); terr != nil {
			w.broken = err
		}
		return err
	}
	if err = datasync(seg.f); err != nil {
		err = fmt.Errorf("failed to sync raft log segment: %w", err)
		w.broken = err
		if fresh {
			seg.f.Close()
		}
		return err
	}
	return nil
}

func (w *wal) tail() *segment {
	if len(w.segs) == 0 {
		return nil
	}
	return w.segs[len(w.segs)-1]
}

// DeleteRange deletes entries lo..hi inclusive. raft deletes only a head (after
// a snapshot) or a tail (from a conflicting entry on); a range strictly inside
// the log is refused.
func (w *wal) DeleteRange(lo, hi uint64) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usableLocked(); err != nil {
		return fmt.Errorf("failed to delete raft log entries %d..%d: %w", lo, hi, err)
	}
	if err := w.deleteLocked(lo, hi); err != nil {
		return fmt.Errorf("failed to delete raft log entries %d..%d: %w", lo, hi, err)
	}
	return nil
}

func (w *wal) deleteLocked(lo, hi uint64) error {
	first, last := w.firstLocked(), w.lastLocked()
	switch {
	case len(w.segs) == 0 || lo > hi || hi < first || lo > last:
		return nil
	case lo <= first:
		return w.dropHeadLocked(hi + 1) // a failure leaves files the recovery drops
	case hi >= last:
		if err := w.cutTailLocked(lo); err != nil {
			w.broken = err
			return err
		}
		return nil
	default:
		return fmt.Errorf("%w: only a head or a tail of %d..%d can be deleted", ErrInvalid, first, last)
	}
}

// dropHeadLocked makes first the log's first index: it records it, then removes
// the segments wholly below it.
func (w *wal) dropHeadLocked(first uint64) error {
	if err := writeFirst(w.dir, first); err != nil {
		return err
	}
	k := 0
	for k < len(w.segs) && w.segs[k].last() < first {
		k++
	}
	gone := w.segs[:k]
	w.mu.Lock()
	w.first = first
	w.segs = append([]*segment(nil), w.segs[k:]...)
	w.mu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	var err error
	for _, s := range gone {
		err = errors.Join(err, s.remove())
	}
	return errors.Join(err, syncDir(w.dir))
}

// cutTailLocked deletes the entries from lo on, lo above the first index: the
// segments that start at lo or later are removed, last first and each removal
// synced, so a crash leaves a prefix of the log, never a gap; then the segment
// holding lo is cut before it.
func (w *wal) cutTailLocked(lo uint64) error {
	k := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].base >= lo })
	gone := w.segs[k:]
	keep := w.segs[:k:k]
	w.mu.Lock()
	w.segs = keep
	var cut *segment
	var size int64
	if n := len(keep); n > 0 && keep[n-1].last() >= lo {
		cut = keep[n-1]
		size = cut.offs[lo-cut.base]
		// Readers see the shorter log now; the file shrinks below, under wmu.
		cut.offs = cut.offs[:lo-cut.base]
		cut.size = size
	}
	w.mu.Unlock()
	for i := len(gone) - 1; i >= 0; i-- {
		if err := gone[i].remove(); err != nil {
			return err
		}
		if err := syncDir(w.dir); err != nil {
			return err
		}
	}
	if cut == nil {
		return nil
	}
	if err := cut.f.Truncate(size); err != nil {
		return fmt.Errorf("failed to truncate raft log segment: %w", err)
	}
	if err := datasync(cut.f); err != nil {
		return fmt.Errorf("failed to sync raft log segment: %w", err)
	}
	return nil
}

// Close closes the segment files. Calling it again does nothing.
func (w *wal) Close() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	for _, s := range w.segs {
		err = errors.Join(err, s.f.Close())
	}
	w.segs = nil
	return err
}

// slowDisk returns the slow-disk test hook.
func (w *wal) slowDisk() *atomic.Int64 { return &w.delay }
