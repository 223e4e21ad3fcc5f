package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// The replicated key/value table: a small generic map in the FSM for what every node
// must agree on and that is not membership or placement (the gateway keeps its API
// token hashes there). It is meant for small tables changed rarely: every value is
// in each snapshot and in memory on every node, and every change is a raft entry.

// Limits of the key/value table, checked by SetValues.
const (
	// MaxKeyLen bounds a key.
	MaxKeyLen = 256
	// MaxValueLen bounds a value.
	MaxValueLen = 64 << 10
)

// SetValue sets one key of the replicated key/value table; see SetValues.
func (n *Node) SetValue(ctx context.Context, key string, val []byte) error {
	return n.SetValues(ctx, map[string][]byte{key: val})
}

// SetValues sets keys of the replicated key/value table in one raft entry, all or
// none; an empty value deletes its key. It must run on the leader and returns a
// *NotLeaderError naming the leader otherwise, so the gateway can forward it. When it
// returns nil the change is committed and applied on the leader; every other node
// applies it with its next entries (Config.OnValues tells it). Keys are 1 to
// MaxKeyLen bytes, values at most MaxValueLen.
func (n *Node) SetValues(ctx context.Context, kv map[string][]byte) error {
	if err := n.setValues(ctx, kv); err != nil {
		return fmt.Errorf("failed to set values: %w", err)
	}
	return nil
}

func (n *Node) setValues(ctx context.Context, kv map[string][]byte) error {
	if len(kv) == 0 {
		return nil
	}
	for k, v := range kv {
		if k == "" || len(k) > MaxKeyLen || len(v) > MaxValueLen {
			return fmt.Errorf("%w: key %.40q (%d bytes) or its value (%d bytes) is out of bounds", ErrInvalid, k, len(k), len(v))
		}
	}
	cur := n.fsm.cur.Load().values
	same := true
	for k, v := range kv {
		if old, ok := cur[k]; ok != (len(v) > 0) || string(old) != string(v) {
			same = false
			break
		}
	}
	if same && n.IsLeader() { // nothing to change: no entry
		return nil
	}
	e := encoder{b: []byte{byte(cmdSetValues)}}
	encodeValues(&e, kv)
	return n.apply(ctx, e.b)
}

// Value returns the value of key in this replica's key/value table, which may be a
// little behind the leader's. The slice must not be modified.
func (n *Node) Value(key string) ([]byte, bool) {
	v, ok := n.fsm.cur.Load().values[key]
	return v, ok
}

// Values returns every key of this replica's key/value table that starts with
// prefix, with its value. The slices must not be modified.
func (n *Node) Values(prefix string) map[string][]byte {
	vals := n.fsm.cur.Load().values
	out := make(map[string][]byte)
	for k, v := range vals {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// setValues applies a set-values command: a copy of the table with kv applied.
func (s *state) setValues(kv map[string][]byte) (*state, error) {
	changed := false
	for k, v := range kv {
		if k == "" {
			return nil, fmt.Errorf("%w: empty key", ErrInvalid)
		}
		if old, ok := s.values[k]; ok != (len(v) > 0) || string(old) != string(v) {
			changed = true
		}
	}
	if !changed {
		return s, nil
	}
	n := *s
	n.values = make(map[string][]byte, len(s.values)+len(kv))
	for k, v := range s.values {
		n.values[k] = v
	}
	for k, v := range kv {
		if len(v) == 0 {
			delete(n.values, k)
		} else {
			n.values[k] = v
		}
	}
	return &n, nil
}

// encodeValues writes a key/value map in key order (deterministic).
func encodeValues(e *encoder, kv map[string][]byte) {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.bytes(kv[k])
	}
}

func decodeValues(d *decoder) map[string][]byte {
	out := map[string][]byte{}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		k := d.string()
		out[k] = d.bytes()
	}
	return out
}
