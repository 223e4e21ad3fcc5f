package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// testFSM returns an FSM on a state file in a temporary directory, closed at cleanup.
func testFSM(tb testing.TB) *fsm {
	tb.Helper()
	db, err := openStateDB(filepath.Join(tb.TempDir(), "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.close(); err != nil {
			tb.Error(err)
		}
	})
	return newFSM(discard, db)
}

func snapshotBytes(tb testing.TB, f *fsm) []byte {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	var sink memSink
	defer snap.Release()
	if err := snap.Persist(&sink); err != nil {
		tb.Fatal(err)
	}
	return sink.Bytes()
}

// roundTrip restores a new FSM from a snapshot of f and fails tb unless the restored
// state encodes as f's does.
func roundTrip(tb testing.TB, f *fsm) *fsm {
	tb.Helper()
	g := testFSM(tb)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(tb, f)))); err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(f.cur.Load().encode(), g.cur.Load().encode()) {
		tb.Fatal("restored state encodes differently")
	}
	return g
}

// applyAll applies cmds at indexes 1.. and returns each result.
func applyAll(f *fsm, cmds [][]byte) []any {
	out := make([]any, len(cmds))
	for i, c := range cmds {
		out[i] = f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: c})
	}
	return out
}

func member(id string, labels map[string]string) Member {
	return Member{ID: NodeID(id), RaftAddr: id + ":7000", HTTPAddr: id + ":8080", Labels: labels}
}

// history is a log exercising every command type, including refused ones.
func history() [][]byte {
	s := emptyState()
	var cmds [][]byte
	for _, id := range []string{"c", "a", "b", "e", "d"} {
		m := member(id, map[string]string{"pool": "p" + id, "zone": "z1"})
		cmds = append(cmds, encodeRegister(m))
		s, _ = s.register(Member{ID: m.ID, RaftAddr: m.RaftAddr, Status: StatusAlive})
	}
	moves, _, _ := plan(s, 0, nil)
	cmds = append(cmds, encodeAssign(moves))
	cmds = append(cmds,
		encodeSetStatus("d", StatusLeft),
		encodePin("sb-1", map[string]string{"pool": "pa"}, "a", 0),
		encodePin("sb-2", map[string]string{"zone": "z1"}, "", 0),
		encodeAssign([]move{{P: 1, Owner: "a", Expect: 12345}}), // stale: refused
		[]byte{byte(cmdIgnorable | 0x11), 1, 2, 3},
		encodeUnpin("sb-1", 8),
		encodeFail("e", []move{{P: 2, Owner: "a", Expect: 12345}}), // stale: refused whole
		encodeFail("e", nil),
		encodePin("sb-3", map[string]string{"zone": "z1"}, "a", 0),
	)
	// sb-3's pin was made by the entry just appended: hand it to b (a drain's move).
	pinned := uint64(len(cmds))
	cmds = append(cmds,
		encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb-3", To: "b", Expect: pinned}}),
		encodePinMove(pinOpDrop, []pinOp{{Sandbox: "sb-3", Expect: pinned}}), // stale: refused
	)
	return cmds
}

func TestFSMDeterminism(t *testing.T) {
	t.Parallel()
	cmds := history()
	f1, f2 := testFSM(t), testFSM(t)
	applyAll(f1, cmds)
	applyAll(f2, cmds)
	b1, b2 := f1.cur.Load().encode(), f2.cur.Load().encode()
	if !bytes.Equal(b1, b2) {
		t.Fatalf("same log, different snapshots (%d vs %d bytes)", len(b1), len(b2))
	}
	// Encoding the same state again must not depend on map iteration order.
	for i := 0; i < 20; i++ {
		if !bytes.Equal(b1, f1.cur.Load().encode()) {
			t.Fatal("re-encoding the same state gave different bytes")
		}
	}
	if f1.cur.Load().pins["sb-1"].Owner != "" {
		t.Fatal("unpin at the pin's epoch did not apply")
	}
}

func TestFSMCompareAndSet(t *testing.T) {
	t.Parallel()
	base := [][]byte{encodeRegister(member("a", nil)), encodeRegister(member("b", nil))}
	tests := []struct {
		name    string
		cmd     func(s *state) []byte
		wantErr error
	}{
		{"fresh partition at epoch 0", func(*state) []byte { return encodeAssign([]move{{P: 7, Owner: "a"}}) }, nil},
		{"stale epoch", func(*state) []byte { return encodeAssign([]move{{P: 7, Owner: "a", Expect: 1}}) }, ErrStaleEpoch},
		{"one stale move rejects all", func(*state) []byte {
			return encodeAssign([]move{{P: 1, Owner: "a"}, {P: 2, Owner: "b", Expect: 9}})
		}, ErrStaleEpoch},
		{"unknown owner", func(*state) []byte { return encodeAssign([]move{{P: 7, Owner: "zz"}}) }, ErrUnknownMember},
		{"repeated partition", func(*state) []byte {
			return encodeAssign([]move{{P: 3, Owner: "a"}, {P: 3, Owner: "b"}})
		}, ErrInvalid},
		{"partition out of range", func(*state) []byte { return encodeAssign([]move{{P: Partitions, Owner: "a"}}) }, ErrInvalid},
		{"stale pin", func(*state) []byte { return encodePin("s", nil, "a", 4) }, ErrStaleEpoch},
		{"pin to left member", func(*state) []byte { return encodePin("s", nil, "zz", 0) }, ErrUnknownMember},
		{"truncated command", func(*state) []byte { return encodeAssign([]move{{P: 7, Owner: "a"}})[:4] }, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := testFSM(t)
			applyAll(f, base)
			before := f.cur.Load()
			idx := uint64(len(base) + 1)
			res := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: tt.cmd(before)})
			err, _ := res.(error)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if f.cur.Load() != before {
					t.Fatal("a refused command changed the state")
				}
				return
			}
			if a := f.cur.Load().parts[7]; a.Owner != "a" || a.Epoch != idx || a.State != PartitionActive {
				t.Fatalf("partition 7 = %+v, want owner a at epoch %d", a, idx)
			}
			if before.parts[7].Owner != "" {
				t.Fatal("the published state was modified in place")
			}
		})
	}
}

func TestFSMEpochIsLogIndex(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	applyAll(f, [][]byte{encodeRegister(member("a", nil)), encodeRegister(member("b", nil))})
	var epoch uint64
	for i, idx := range []uint64{10, 11, 500} {
		owner := NodeID([]string{"a", "b", "a"}[i])
		res := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: encodeAssign([]move{{P: 0, Owner: owner, Expect: epoch}})})
		if res != nil {
			t.Fatalf("move %d: %v", i, res)
		}
		a := f.cur.Load().parts[0]
		if a.Epoch != idx || a.Owner != owner {
			t.Fatalf("move %d: got %+v, want epoch %d", i, a, idx)
		}
		epoch = a.Epoch
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	applyAll(f, history())
	g := roundTrip(t, f)
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("sandbox-%d", i)
		o1, e1, ok1 := f.cur.Load().owner(id)
		o2, e2, ok2 := g.cur.Load().owner(id)
		if o1 != o2 || e1 != e2 || ok1 != ok2 || !ok1 {
			t.Fatalf("%s: owner %s/%d/%v before, %s/%d/%v after", id, o1, e1, ok1, o2, e2, ok2)
		}
	}
	if g.cur.Load().members["a"].Labels["pool"] != "pa" {
		t.Fatal("labels lost in the round trip")
	}
	if p := g.cur.Load().pins["sb-2"]; p.Selector["zone"] != "z1" || p.State != PartitionUnassigned {
		t.Fatalf("pin lost in the round trip: %+v", p)
	}
	if p := g.cur.Load().pins["sb-3"]; p.State != PartitionHandoff || p.Next != "b" || p.Owner != "a" {
		t.Fatalf("pin in handoff lost in the round trip: %+v", p)
	}
	b := snapshotBytes(t, f)
	for _, bad := range [][]byte{nil, {9}, b[:len(b)/2], append(append([]byte(nil), b...), 0)} {
		if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("restore of %d corrupt bytes: %v", len(bad), err)
		}
	}
}

func TestFSMUnknownCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     byte
		wantErr error
	}{
		{"ignorable is skipped", byte(cmdIgnorable) | 0x42, nil},
		{"non-ignorable stops the replica", 0x42, ErrUnknownCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := testFSM(t)
			applyAll(f, [][]byte{encodeRegister(member("a", nil))})
			before := f.cur.Load()
			res := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{tt.typ, 1, 2}})
			err, _ := res.(error)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if f.cur.Load() != before {
				t.Fatal("unknown command changed the state")
			}
			// A later valid command applies only if the replica was not stopped.
			res = f.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: encodeRegister(member("b", nil))})
			_, applied := f.cur.Load().members["b"]
			if applied != (tt.wantErr == nil) {
				t.Fatalf("later command applied=%v (result %v)", applied, res)
			}
			if tt.wantErr != nil && !errors.Is(f.err(), ErrUnknownCommand) {
				t.Fatalf("err() = %v, want the latched failure", f.err())
			}
		})
	}
}

func FuzzDecodeState(f *testing.F) {
	g := testFSM(f)
	applyAll(g, history())
	f.Add(g.cur.Load().encode())
	f.Add([]byte{snapshotVersion, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeState(b)
		if err != nil {
			return
		}
		// Non-canonical input (long varints, unsorted maps) may decode; its
		// canonical encoding must then be stable.
		enc := s.encode()
		s2, err := decodeState(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(s2.encode(), enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}
