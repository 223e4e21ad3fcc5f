package actor

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// A queued message is stored under q<seq> as a fixed header followed by its
// messageRec JSON:
//
//	byte 0      msgRecVersion
//	bytes 1-8   visible-again time, big-endian unix nanoseconds (0: visible)
//	bytes 9-12  attempts, big-endian uint32 (how many takes returned it)
//
// The header lets a take skip hidden messages without decoding their data. A record
// that starts with '{' was written by an older version: JSON only, never taken.
const (
	msgRecVersion = 1
	msgHeaderLen  = 13
)

// msgState is a queued message's delivery state, from its record's header.
type msgState struct {
	visibleAt time.Time // zero: visible
	attempts  uint32
}

func encodeMsg(st msgState, rec []byte) []byte {
	v := make([]byte, 0, msgHeaderLen+len(rec))
	v = append(v, msgRecVersion)
	var at uint64
	if !st.visibleAt.IsZero() {
		at = uint64(st.visibleAt.UnixNano())
	}
	v = binary.BigEndian.AppendUint64(v, at)
	v = binary.BigEndian.AppendUint32(v, st.attempts)
	return append(v, rec...)
}

// decodeMsgState reads a stored message's header and returns it with the JSON part.
func decodeMsgState(v []byte) (msgState, []byte, error) {
	if len(v) > 0 && v[0] == '{' {
		return msgState{}, v, nil
	}
	if len(v) < msgHeaderLen || v[0] != msgRecVersion {
		return msgState{}, nil, fmt.Errorf("bad message record (%d bytes)", len(v))
	}
	var st msgState
	if at := binary.BigEndian.Uint64(v[1:9]); at != 0 {
		st.visibleAt = time.Unix(0, int64(at))
	}
	st.attempts = binary.BigEndian.Uint32(v[9:13])
	return st, v[msgHeaderLen:], nil
}

func decodeMsgRec(raw []byte) (messageRec, error) {
	var m messageRec
	if err := json.Unmarshal(raw, &m); err != nil {
		return messageRec{}, fmt.Errorf("decode message: %w", err)
	}
	return m, nil
}

// msgOverlay holds the message records written by the current group, by seq (nil:
// deleted), until it commits.
type msgOverlay map[uint64][]byte

// putMsg stores a message record in the current group and remembers it until the
// group commits, so later turns of the same group see it (see scanMsgs).
func (a *sbActor) putMsg(seq uint64, v []byte) {
	a.write().Put(seqKey(pfxMessage, seq), v)
	a.markMsg(seq, v)
}

// delMsg deletes a message record in the current group (see putMsg).
func (a *sbActor) delMsg(seq uint64) {
	a.write().Delete(seqKey(pfxMessage, seq))
	a.markMsg(seq, nil)
}

func (a *sbActor) markMsg(seq uint64, v []byte) {
	if a.msgDirty == nil {
		a.msgDirty = msgOverlay{}
		a.afterCommit(func() { a.msgDirty = nil })
	}
	a.msgDirty[seq] = v
}

// getMsg returns message seq's stored value as the current group sees it, or nil.
func (a *sbActor) getMsg(r Reader, seq uint64) []byte {
	if v, ok := a.msgDirty[seq]; ok {
		return v
	}
	return r.Get(seqKey(pfxMessage, seq))
}

// scanMsgs calls fn for each queued message in seq (post) order, as the current group
// sees the queue: committed records from r, overlaid with the group's uncommitted puts
// and deletes. It stops when fn returns false. v is valid only during fn.
func (a *sbActor) scanMsgs(r Reader, fn func(seq uint64, v []byte) bool) {
	dirty := make([]uint64, 0, len(a.msgDirty))
	for seq := range a.msgDirty {
		dirty = append(dirty, seq)
	}
	slices.Sort(dirty)
	i, stopped := 0, false
	// emitDirty passes the group's own records with seq below end; false: stop.
	emitDirty := func(end uint64) bool {
		for ; i < len(dirty) && dirty[i] < end; i++ {
			if v := a.msgDirty[dirty[i]]; v != nil && !fn(dirty[i], v) {
				i++
				return false
			}
		}
		return true
	}
	r.Scan(pfxMessage, nil, func(k, v []byte) bool {
		seq := keySeq(k)
		if !emitDirty(seq) {
			stopped = true
			return false
		}
		if i < len(dirty) && dirty[i] == seq {
			v = a.msgDirty[seq]
			i++
			if v == nil { // deleted in this group
				return true
			}
		}
		if !fn(seq, v) {
			stopped = true
			return false
		}
		return true
	})
	if !stopped {
		emitDirty(^uint64(0))
	}
}
