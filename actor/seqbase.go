package actor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
)

// Node-wide records live in Storage under the reserved sandbox name nodeRecords, which
// is never a valid sandbox id (ids start with a letter or digit), so it can never
// collide with a sandbox's records. It has no keyMeta, so listings skip it.
const nodeRecords = "_node"

// keySeqBase is the node's seq base: the highest event seq and the highest message
// number any deleted sandbox of this node used (2 × big-endian uint64).
var keySeqBase = []byte("seqbase")

// seqBase is the node-wide high-water mark of deleted sandboxes' counters. A new
// sandbox's event seq and message numbers start after it, so a sandbox deleted and
// created again under the same id never repeats a seq or a message id: a client
// resuming with an old seq sees every event of the new one. It only grows, and only
// at a delete; a fresh node's first sandbox still starts at seq 1. One base for the
// node, rather than a tombstone per deleted id, keeps storage from growing with
// deletes. Safe for concurrent use.
type seqBase struct {
	mu      sync.Mutex // protects following; held across the durable write in raise
	loaded  bool
	ev, msg uint64
}

// get returns the base, reading it from storage the first time.
func (s *seqBase) get(st Storage) (ev, msg uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(st); err != nil {
		return 0, 0, err
	}
	return s.ev, s.msg, nil
}

func (s *seqBase) loadLocked(st Storage) error {
	if s.loaded {
		return nil
	}
	err := st.Read(context.Background(), nodeRecords, func(r Reader) error {
		if v := r.Get(keySeqBase); len(v) == 16 {
			s.ev, s.msg = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("actor: failed to read seq base: %w", err)
	}
	s.loaded = true
	return nil
}

// raise makes the base at least (ev, msg) and returns once that is durable.
func (s *seqBase) raise(st Storage, ev, msg uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(st); err != nil {
		return err
	}
	if ev <= s.ev && msg <= s.msg {
		return nil
	}
	ev, msg = max(ev, s.ev), max(msg, s.msg)
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), ev)
	b := &Batch{Sandbox: nodeRecords}
	b.Put(keySeqBase, binary.BigEndian.AppendUint64(v, msg))
	if err := st.Write(context.Background(), b); err != nil {
		return fmt.Errorf("actor: failed to save seq base: %w", err)
	}
	s.ev, s.msg = ev, msg
	return nil
}
