package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// pinFSM returns an FSM with members a and b (pool x) and c (pool y) alive, d
// draining (pool x), and sb pinned to d at index 5; it returns the next free index.
func pinFSM(t *testing.T) (*fsm, uint64) {
	t.Helper()
	f := testFSM(t)
	cmds := [][]byte{
		encodeRegister(member("a", map[string]string{"pool": "x"})),
		encodeRegister(member("b", map[string]string{"pool": "x"})),
		encodeRegister(member("c", map[string]string{"pool": "y"})),
		encodeRegister(member("d", map[string]string{"pool": "x"})),
		encodePin("sb", map[string]string{"pool": "x"}, "d", 0),
		encodeSetStatus("d", StatusDraining),
	}
	for i, r := range applyAll(f, cmds) {
		if r != nil {
			t.Fatalf("setup command %d: %v", i, r)
		}
	}
	return f, uint64(len(cmds) + 1)
}

func applyAt(f *fsm, index uint64, cmd []byte) error {
	r := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: cmd})
	if err, ok := r.(error); ok {
		return err
	}
	return nil
}

// TestPinMoveCommands checks each pin operation's preconditions and result, and
// which batch epochs the store accepts for a pin in each state.
func TestPinMoveCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// steps run in order at successive indexes; an empty want means success.
		steps func(pinned uint64, next uint64) []step
		owner NodeID
		state PartitionState
		gone  bool
	}{
		{
			name: "begin then complete",
			steps: func(pinned, i uint64) []step {
				return []step{
					{cmd: encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "a", Expect: pinned}})},
					{cmd: encodePinMove(pinOpComplete, []pinOp{{Sandbox: "sb", Expect: i}})},
				}
			},
			owner: "a", state: PartitionActive,
		},
		{
			name: "begin then abort",
			steps: func(pinned, i uint64) []step {
				return []step{
					{cmd: encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "b", Expect: pinned}})},
					{cmd: encodePinMove(pinOpAbort, []pinOp{{Sandbox: "sb", Expect: i}})},
				}
			},
			owner: "d", state: PartitionActive,
		},
		{
			name: "target not matching the selector",
			steps: func(pinned, _ uint64) []step {
				return []step{{cmd: encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "c", Expect: pinned}}), want: ErrUnknownMember}}
			},
			owner: "d", state: PartitionActive,
		},
		{
			name: "stale begin",
			steps: func(pinned, _ uint64) []step {
				return []step{{cmd: encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "a", Expect: pinned + 1}}), want: ErrStaleEpoch}}
			},
			owner: "d", state: PartitionActive,
		},
		{
			name: "complete of an active pin",
			steps: func(pinned, _ uint64) []step {
				return []step{{cmd: encodePinMove(pinOpComplete, []pinOp{{Sandbox: "sb", Expect: pinned}}), want: ErrStaleEpoch}}
			},
			owner: "d", state: PartitionActive,
		},
		{
			name: "re-pin refused while in handoff, drop refused too",
			steps: func(pinned, i uint64) []step {
				return []step{
					{cmd: encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "a", Expect: pinned}})},
					{cmd: encodePin("sb", map[string]string{"pool": "x"}, "b", i), want: ErrHandoff},
					{cmd: encodePinMove(pinOpDrop, []pinOp{{Sandbox: "sb", Expect: i}}), want: ErrHandoff},
				}
			},
			owner: "d", state: PartitionHandoff,
		},
		{
			name: "drop of an unwritten pin",
			steps: func(pinned, _ uint64) []step {
				return []step{{cmd: encodePinMove(pinOpDrop, []pinOp{{Sandbox: "sb", Expect: pinned}})}}
			},
			gone: true,
		},
		{
			name: "drop refused once a batch landed under the pin",
			steps: func(pinned, _ uint64) []step {
				return []step{
					{cmd: encodeBatches([]*Batch{{Sandbox: "sb", Epoch: pinned, Ops: []Op{{Key: []byte("k"), Value: []byte("v")}}}})},
					{cmd: encodePinMove(pinOpDrop, []pinOp{{Sandbox: "sb", Expect: pinned}}), want: ErrPinInUse},
				}
			},
			owner: "d", state: PartitionActive,
		},
		{
			name: "a fenced batch does not mark the pin written",
			steps: func(pinned, _ uint64) []step {
				return []step{
					{cmd: encodeBatches([]*Batch{{Sandbox: "sb", Epoch: pinned - 1, Ops: []Op{{Key: []byte("k")}}}})},
					{cmd: encodePinMove(pinOpDrop, []pinOp{{Sandbox: "sb", Expect: pinned}})},
				}
			},
			gone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, i := pinFSM(t)
			pinned := f.cur.Load().pins["sb"].Epoch
			for k, st := range tt.steps(pinned, i) {
				err := applyAt(f, i, st.cmd)
				if st.want == nil && err != nil {
					t.Fatalf("step %d: %v", k, err)
				}
				if st.want != nil && !errors.Is(err, st.want) {
					t.Fatalf("step %d: %v, want %v", k, err, st.want)
				}
				i++
			}
			p, ok := f.cur.Load().pins["sb"]
			if tt.gone != !ok {
				t.Fatalf("pin present %v, want gone %v", ok, tt.gone)
			}
			if ok && (p.Owner != tt.owner || p.State != tt.state) {
				t.Fatalf("pin %+v, want owner %s state %d", p, tt.owner, tt.state)
			}
		})
	}
}

type step struct {
	cmd  []byte
	want error
}

// TestPinHandoffWriteEpochs: while a pin is in handoff the store accepts the old
// owner's writes at the epoch before the handoff and at the handoff's, nothing
// else; after it completes, only the new epoch.
func TestPinHandoffWriteEpochs(t *testing.T) {
	t.Parallel()
	f, i := pinFSM(t)
	pinned := f.cur.Load().pins["sb"].Epoch
	if err := applyAt(f, i, encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "a", Expect: pinned}})); err != nil {
		t.Fatal(err)
	}
	s := f.cur.Load()
	for _, c := range []struct {
		epoch uint64
		ok    bool
	}{{pinned, true}, {i, true}, {pinned - 1, false}, {i + 1, false}} {
		if _, ok := s.writeEpoch("sb", c.epoch); ok != c.ok {
			t.Fatalf("in handoff, epoch %d accepted %v, want %v", c.epoch, ok, c.ok)
		}
	}
	if err := applyAt(f, i+1, encodePinMove(pinOpComplete, []pinOp{{Sandbox: "sb", Expect: i}})); err != nil {
		t.Fatal(err)
	}
	s = f.cur.Load()
	for _, c := range []struct {
		epoch uint64
		ok    bool
	}{{pinned, false}, {i, false}, {i + 1, true}} {
		if _, ok := s.writeEpoch("sb", c.epoch); ok != c.ok {
			t.Fatalf("after completion, epoch %d accepted %v, want %v", c.epoch, ok, c.ok)
		}
	}
	if h := s.handoffsFrom("d"); len(h) != 0 {
		t.Fatalf("handoffs from d after completion: %+v", h)
	}
}

// TestPinSnapshotRoundTrip: a pin in handoff and a written pin survive a snapshot,
// and a snapshot of version 4 (no pin extras) restores its pins as written, so the
// orphan sweep never drops a pin whose history it does not know.
func TestPinSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	f, i := pinFSM(t)
	pinned := f.cur.Load().pins["sb"].Epoch
	cmds := [][]byte{
		encodePin("w", map[string]string{"pool": "y"}, "c", 0),
		encodePinMove(pinOpBegin, []pinOp{{Sandbox: "sb", To: "b", Expect: pinned}}),
	}
	for k, c := range cmds {
		if err := applyAt(f, i+uint64(k), c); err != nil {
			t.Fatal(err)
		}
	}
	w := f.cur.Load().pins["w"].Epoch
	if err := applyAt(f, i+2, encodeBatches([]*Batch{{Sandbox: "w", Epoch: w, Ops: []Op{{Key: []byte("k")}}}})); err != nil {
		t.Fatal(err)
	}
	g := roundTrip(t, f)
	s := g.cur.Load()
	if p := s.pins["sb"]; p.State != PartitionHandoff || p.Next != "b" || p.Prev != pinned || p.Written {
		t.Fatalf("pin in handoff after the round trip: %+v", p)
	}
	if !s.pins["w"].Written {
		t.Fatal("written pin lost its mark in the round trip")
	}

	// The same tables as version 4: the extras cut off and the version byte set.
	enc := f.cur.Load().encode()
	var e encoder
	f.cur.Load().encodePinExtras(&e, sortedPins(f.cur.Load()))
	old := append([]byte{4}, enc[1:len(enc)-len(e.b)]...)
	s4, err := decodeState(old)
	if err != nil {
		t.Fatal(err)
	}
	for sb, p := range s4.pins {
		if !p.Written {
			t.Fatalf("pin %s from a version 4 snapshot is not counted written", sb)
		}
	}
}
