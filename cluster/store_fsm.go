package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// verdictsFor decides each batch against the tables s.
func verdictsFor(s *state, bs []*Batch) []batchVerdict {
	vs := make([]batchVerdict, len(bs))
	for i, b := range bs {
		if validBatch(b) != nil {
			vs[i].code = batchInvalid
			continue
		}
		// An unowned partition (failover, or never placed) accepts nothing: no writer
		// can have been admitted to it.
		if epoch, ok := s.writeEpoch(b.Sandbox, b.Epoch); !ok {
			vs[i] = batchVerdict{code: batchFenced, epoch: epoch}
		}
	}
	return vs
}

// dedup drops repeated ids (a group may hold several batches of one sandbox).
func dedup(ids []string) []string {
	if len(ids) < 2 {
		return ids
	}
	seen := make(map[string]struct{}, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// snapshotStore is the first byte of a snapshot that carries the state file:
//
//	snapshotStore, state (length-prefixed encoding, see state.encode),
//	applied uvarint (the file's applied index), size uvarint, then the bbolt
//	file (Tx.WriteTo, size bytes), then nothing
//
// Snapshots of earlier versions are a bare state encoding, version 1 or 2.
const snapshotStore = 3

// maxStateBytes bounds the encoded tables in a snapshot.
const maxStateBytes = 256 << 20

// Snapshot captures the current tables and opens a read transaction of the state
// file; Persist streams both on raft's snapshot goroutine while Apply goes on.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.db.drain(); err != nil { // raft takes the snapshot as of the last entry applied
		return nil, err
	}
	tx, release, err := f.db.begin()
	if err != nil {
		return nil, err
	}
	return &snapshot{s: f.cur.Load(), tx: tx, release: release}, nil
}

type snapshot struct {
	s       *state
	tx      *bolt.Tx
	release func()
}

var _ raft.FSMSnapshot = (*snapshot)(nil)

// Persist streams the snapshot: the file is copied page by page from the read
// transaction, never held in memory.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	e := encoder{b: []byte{snapshotStore}}
	e.bytes(s.s.encode())
	e.uvarint(readApplied(s.tx))
	e.uvarint(uint64(s.tx.Size()))
	_, err := sink.Write(e.b)
	if err == nil {
		_, err = s.tx.WriteTo(sink)
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("failed to write snapshot: %w", err)
	}
	return sink.Close()
}

// Release ends the snapshot's read transaction.
func (s *snapshot) Release() { s.release() }

// Restore replaces the tables with a snapshot's, and the state file with its file
// unless the local file already holds at least as much of the log: raft restores
// the latest snapshot at every start, and the file kept across a restart (see the
// package doc) is usually ahead of it. Both hold a prefix of the same committed log,
// so the further one is right, and the entries after it replay idempotently.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	_ = f.db.drain() // a failed writer latched the FSM; the restore replaces its file anyway
	f.leases.clear() // the snapshot may hold lease entries this replica never applied
	if err := f.restore(bufio.NewReaderSize(rc, 64<<10)); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: snapshot truncated (%v)", ErrCorrupt, err)
		}
		return fmt.Errorf("failed to restore snapshot: %w", err)
	}
	return nil
}

func (f *fsm) restore(r *bufio.Reader) error {
	v, err := r.Peek(1)
	if err != nil {
		return err
	}
	if v[0] != snapshotStore { // an earlier version: tables only, no records yet
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		s, err := decodeState(b)
		if err != nil {
			return err
		}
		f.publish(s)
		f.valuesRestored()
		return nil
	}
	_, _ = r.ReadByte()
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > maxStateBytes {
		return fmt.Errorf("%w: %d bytes of tables", ErrCorrupt, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	s, err := decodeState(b)
	if err != nil {
		return err
	}
	applied, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	size, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if local := f.db.applied.Load(); local == 0 || applied > local {
		if err := f.db.replace(r, int64(size)); err != nil {
			return err
		}
		f.ov.prune(f.db.applied.Load())
	}
	f.publish(s)
	f.valuesRestored()
	if f.onApply != nil {
		f.onApply(nil)
	}
	return nil
}

// valuesRestored tells Config.OnValues that a restore may have changed the
// key/value table.
func (f *fsm) valuesRestored() {
	if f.onValues != nil {
		f.onValues()
	}
}

// writeEpoch reports whether a batch of sandbox stamped with epoch may be applied to
// the tables s, and the sandbox's current epoch. An active assignment accepts its
// own epoch only. A partition in handoff accepts its handoff epoch and the epoch it
// had before (Assignment.Prev): nobody admits its sandboxes then, so the only
// writers are the old owner's activations ending (passivation), and the
// CompleteHandoff or AbortHandoff that ends the handoff moves the epoch past both.
func (s *state) writeEpoch(sandbox string, epoch uint64) (uint64, bool) {
	a := s.parts[PartitionOf(sandbox)]
	if p, ok := s.pins[sandbox]; ok {
		a = p.Assignment
	}
	switch a.State {
	case PartitionActive:
		return a.Epoch, a.Epoch == epoch
	case PartitionHandoff:
		return a.Epoch, epoch == a.Epoch || epoch == a.Prev
	}
	return a.Epoch, false
}
