package cluster

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// handoffFSM returns a placed 3-member FSM and a partition of node-00 with its epoch.
func handoffFSM(tb testing.TB) (f *fsm, p int, epoch uint64) {
	tb.Helper()
	f = placedFSM(tb, 3)
	s := f.cur.Load()
	p = partitionOf(s, "node-00")
	return f, p, s.parts[p].Epoch
}

// TestHandoffCommands: BeginHandoff, CompleteHandoff and AbortHandoff are
// compare-and-sets on the epoch, all or nothing, and each sets the epoch to its
// entry's index. Every case begins a handoff of p from node-00 to node-01 at index
// 100 first (or not, when begun is false), then applies cmd at index 101.
func TestHandoffCommands(t *testing.T) {
	t.Parallel()
	const begunAt, at = 100, 101
	tests := []struct {
		name    string
		begun   bool
		cmd     func(p int, epoch uint64) []byte
		wantErr error
		want    func(p int, epoch uint64) Assignment // when wantErr is nil; epoch: before any handoff
	}{
		{name: "begin", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: e}})
		}, want: func(_ int, e uint64) Assignment {
			return Assignment{Owner: "node-00", Epoch: at, State: PartitionHandoff, Next: "node-01", Prev: e}
		}},
		{name: "begin at a stale epoch", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: e + 1}})
		}, wantErr: ErrStaleEpoch},
		{name: "begin from a member that does not own it", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-02", To: "node-01", Expect: e}})
		}, wantErr: ErrStaleEpoch},
		{name: "begin to itself", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-00", Expect: e}})
		}, wantErr: ErrUnknownMember},
		{name: "begin to a stranger", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "zz", Expect: e}})
		}, wantErr: ErrUnknownMember},
		{name: "begin twice", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-02", Expect: begunAt}})
		}, wantErr: ErrStaleEpoch},
		{name: "one bad handoff refuses all", cmd: func(p int, e uint64) []byte {
			return encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: e}, {P: p, From: "node-00", To: "node-02", Expect: e}})
		}, wantErr: ErrInvalid},
		{name: "complete", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeCompleteHandoff([]move{{P: p, Owner: "node-01", Expect: begunAt}})
		}, want: func(int, uint64) Assignment { return Assignment{Owner: "node-01", Epoch: at, State: PartitionActive} }},
		{name: "complete at the epoch before the handoff", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeCompleteHandoff([]move{{P: p, Owner: "node-01", Expect: e}})
		}, wantErr: ErrStaleEpoch},
		{name: "complete what is not in handoff", cmd: func(p int, e uint64) []byte {
			return encodeCompleteHandoff([]move{{P: p, Owner: "node-01", Expect: e}})
		}, wantErr: ErrStaleEpoch},
		{name: "complete to a stranger", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeCompleteHandoff([]move{{P: p, Owner: "zz", Expect: begunAt}})
		}, wantErr: ErrUnknownMember},
		{name: "abort", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeAbortHandoff([]epochRef{{P: p, Expect: begunAt}})
		}, want: func(int, uint64) Assignment { return Assignment{Owner: "node-00", Epoch: at, State: PartitionActive} }},
		{name: "abort at a stale epoch", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeAbortHandoff([]epochRef{{P: p, Expect: e}})
		}, wantErr: ErrStaleEpoch},
		{name: "assign cannot end a handoff", begun: true, cmd: func(p int, e uint64) []byte {
			return encodeAssign([]move{{P: p, Owner: "node-02", Expect: begunAt}})
		}, wantErr: ErrHandoff},
		{name: "truncated", cmd: func(p int, e uint64) []byte {
			b := encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: e}})
			return b[:len(b)-1]
		}, wantErr: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, p, epoch := handoffFSM(t)
			if tt.begun {
				b := encodeBeginHandoff([]handoff{{P: p, From: "node-00", To: "node-01", Expect: epoch}})
				if r := f.Apply(&raft.Log{Index: begunAt, Type: raft.LogCommand, Data: b}); r != nil {
					t.Fatal(r)
				}
			}
			before := f.cur.Load()
			r := f.Apply(&raft.Log{Index: at, Type: raft.LogCommand, Data: tt.cmd(p, epoch)})
			err, _ := r.(error)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || f.cur.Load() != before {
					t.Fatalf("Apply = %v (state changed %v), want %v and no change", r, f.cur.Load() != before, tt.wantErr)
				}
				return
			}
			if r != nil {
				t.Fatalf("Apply = %v", r)
			}
			if got := f.cur.Load().parts[p]; got != tt.want(p, epoch) {
				t.Fatalf("partition %d = %+v, want %+v", p, got, tt.want(p, epoch))
			}
			if before.parts[p].Epoch > at {
				t.Fatal("the published state was modified in place")
			}
		})
	}
}

// TestSnapshotHandoffs: a partition in handoff survives a snapshot round trip with
// its target beside the key/value table, versions 2 and 3 (no handoff section)
// still decode, and a handoff of an out-of-range partition is refused.
func TestSnapshotHandoffs(t *testing.T) {
	t.Parallel()
	f, p, epoch := handoffFSM(t)
	applyHandoff(t, f, 100, handoff{P: p, From: "node-00", To: "node-02", Expect: epoch})
	g := roundTrip(t, f)
	if got := g.cur.Load().parts[p]; got != f.cur.Load().parts[p] || got.Next != "node-02" || got.Prev != epoch {
		t.Fatalf("restored %+v, want %+v", got, f.cur.Load().parts[p])
	}
	placed := placedFSM(t, 3).cur.Load()
	placed, err := placed.setValues(map[string][]byte{"k": []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	v4 := placed.encode()
	v3 := append([]byte{3}, v4[1:len(v4)-1]...) // no handoff section: one zero count here
	s, err := decodeState(v3)
	if err != nil || s.index != placed.index || !slices.Equal(s.parts, placed.parts) || string(s.values["k"]) != "v" {
		t.Fatalf("v3 decoded to index %d, values %q (%v)", s.index, s.values, err)
	}
	empty := placedFSM(t, 3).cur.Load().encode()
	v2 := append([]byte{2}, empty[1:len(empty)-2]...) // nor the table: another zero count
	if s, err = decodeState(v2); err != nil || len(s.parts) != Partitions {
		t.Fatalf("v2 decoded: %v", err)
	}
	bad := append([]byte(nil), v4[:len(v4)-1]...)
	bad = append(bad, 1, 0xff, 0x7f, 1, 'x', 0) // a handoff of partition 16383
	if _, err := decodeState(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("handoff of an out of range partition: %v", err)
	}
}

func applyHandoff(tb testing.TB, f *fsm, index uint64, hs ...handoff) {
	tb.Helper()
	if r := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: encodeBeginHandoff(hs)}); r != nil {
		tb.Fatal(r)
	}
}

// TestAdmitHandoff: while a partition is in handoff no node admits its sandboxes,
// each with ErrHandoff, and Owner reports no owner; after CompleteHandoff the new
// owner admits and the old one is told to forward.
func TestAdmitHandoff(t *testing.T) {
	t.Parallel()
	from, to := ids(3)[0], ids(3)[1]
	old, clk := leaseNode(t, from)
	next, _ := leaseNode(t, to)
	next.now = clk.now
	sb := ownedBy(t, old, from)
	p := PartitionOf(sb)
	epoch := old.Epoch(sb)
	for _, n := range []*Node{old, next} {
		n.lease.extend(clk.now() + time.Second)
		applyHandoff(t, n.fsm, 100, handoff{P: p, From: from, To: to, Expect: epoch})
		if err := n.Admit(sb); !errors.Is(err, ErrHandoff) {
			t.Fatalf("%s: Admit during the handoff = %v", n.ID(), err)
		}
		if o, e, ok := n.Owner(sb); ok || o != from || e != 100 || n.Epoch(sb) != 100 {
			t.Fatalf("%s: Owner during the handoff = %s, %d, %v", n.ID(), o, e, ok)
		}
		r := n.fsm.Apply(&raft.Log{Index: 101, Type: raft.LogCommand, Data: encodeCompleteHandoff([]move{{P: p, Owner: to, Expect: 100}})})
		if r != nil {
			t.Fatal(r)
		}
	}
	if err := next.Admit(sb); err != nil {
		t.Fatalf("new owner's Admit = %v", err)
	}
	if o, ok := OwnerOf(old.Admit(sb)); !ok || o.Owner != to || o.Epoch != 101 {
		t.Fatalf("old owner's Admit = %v", old.Admit(sb))
	}
}

// TestPlanHandoffs: partitions in handoff are left alone; a draining member's
// partitions all move within the budget, idle ones first, busy ones too; moves off
// members that serve become handoffs, orphans plain assignments.
func TestPlanHandoffs(t *testing.T) {
	t.Parallel()
	s := placedFSM(t, 3).cur.Load()
	drainer := NodeID("node-00")
	var mine []int
	for p, a := range s.parts {
		if a.Owner == drainer {
			mine = append(mine, p)
		}
	}
	inHandoff := mine[0]
	s, err := s.beginHandoff(100, []handoff{{P: inHandoff, From: drainer, To: "node-01", Expect: s.parts[inHandoff].Epoch}})
	if err != nil {
		t.Fatal(err)
	}
	draining, _ := s.setStatus(drainer, StatusDraining)
	busy := func(p int) bool { return p%2 == 0 }
	idle := 0
	for _, p := range mine[1:] {
		if !busy(p) {
			idle++
		}
	}
	tests := []struct {
		name        string
		budget      int
		wantMoves   int
		wantPending int
	}{
		{name: "budget for the idle ones", budget: idle, wantMoves: idle, wantPending: len(mine) - idle},
		{name: "budget for all", budget: Partitions, wantMoves: len(mine) - 1, wantPending: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			moves, used, pending := planFenced(draining, tt.budget, busy, func(NodeID) bool { return false })
			if len(moves) != tt.wantMoves || used != tt.wantMoves || pending != tt.wantPending {
				t.Fatalf("%d moves, %d used, %d pending; want %d, %d", len(moves), used, pending, tt.wantMoves, tt.wantPending)
			}
			for i, m := range moves {
				if m.P == inHandoff || draining.parts[m.P].Owner != drainer || m.Owner == drainer {
					t.Fatalf("move %+v", m)
				}
				if i < idle && busy(m.P) {
					t.Fatalf("busy partition %d moved before an idle one", m.P)
				}
			}
			assign, begin := splitMoves(draining, moves)
			if len(assign) != 0 || len(begin) != len(moves) {
				t.Fatalf("%d assignments, %d handoffs", len(assign), len(begin))
			}
			if _, err := draining.beginHandoff(200, begin); err != nil {
				t.Fatalf("plan does not apply: %v", err)
			}
		})
	}
	down, _ := s.setStatus(drainer, StatusDown)
	moves, _, _ := planFenced(down, 0, nil, nil)
	if assign, begin := splitMoves(down, moves); len(begin) != 0 || len(assign) != len(mine)-1 {
		t.Fatalf("a down member's partitions: %d assignments, %d handoffs", len(assign), len(begin))
	}
}

// TestHandoffsFrom groups a member's outgoing handoffs by epoch and target.
func TestHandoffsFrom(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	s := f.cur.Load()
	var hs []handoff
	for p, a := range s.parts {
		if a.Owner == "node-00" && len(hs) < 6 {
			hs = append(hs, handoff{P: p, From: "node-00", To: ids(3)[1+len(hs)%2], Expect: a.Epoch})
		}
	}
	applyHandoff(t, f, 100, hs[:4]...)
	applyHandoff(t, f, 101, hs[4:]...)
	got := f.cur.Load().handoffsFrom("node-00")
	want := []Handoff{
		{From: "node-00", To: "node-01", Epoch: 100, Partitions: []int{hs[0].P, hs[2].P}},
		{From: "node-00", To: "node-02", Epoch: 100, Partitions: []int{hs[1].P, hs[3].P}},
		{From: "node-00", To: "node-01", Epoch: 101, Partitions: []int{hs[4].P}},
		{From: "node-00", To: "node-02", Epoch: 101, Partitions: []int{hs[5].P}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].From != want[i].From || got[i].To != want[i].To || got[i].Epoch != want[i].Epoch || !slices.Equal(got[i].Partitions, want[i].Partitions) {
			t.Fatalf("handoff %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if h := f.cur.Load().handoffsFrom("node-01"); len(h) != 0 {
		t.Fatalf("node-01 hands off %+v", h)
	}
}

// TestReportFrames round-trips a handoff report and refuses damaged ones.
func TestReportFrames(t *testing.T) {
	t.Parallel()
	h := Handoff{From: "a", To: "b", Epoch: 1 << 40, Partitions: []int{0, 7, Partitions - 1}}
	b := encodeReport(h)
	got, err := decodeReport(b)
	if err != nil || got.From != h.From || got.To != h.To || got.Epoch != h.Epoch || !slices.Equal(got.Partitions, h.Partitions) {
		t.Fatalf("decoded %+v (%v)", got, err)
	}
	hp := Handoff{From: "a", To: "b", Epoch: 9, Sandboxes: []string{"sb-1", "sb-2"}}
	got, err = decodeReport(encodeReport(hp))
	if err != nil || !slices.Equal(got.Sandboxes, hp.Sandboxes) || len(got.Partitions) != 0 {
		t.Fatalf("decoded a report of pins: %+v (%v)", got, err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{name: "truncated", b: b[:len(b)-1]},
		{name: "truncated pins", b: encodeReport(hp)[:len(encodeReport(hp))-1]},
		{name: "trailing", b: append(append([]byte(nil), b...), 0)},
		{name: "partition out of range", b: encodeReport(Handoff{From: "a", Partitions: []int{Partitions}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := decodeReport(tt.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeReport = %v", err)
			}
		})
	}
}

func FuzzDecodeReport(f *testing.F) {
	f.Add(encodeReport(Handoff{From: "a", To: "b", Epoch: 9, Partitions: []int{1, 2}}))
	f.Add([]byte{0, 0, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeReport(b)
		if err != nil {
			return
		}
		if _, err := decodeReport(encodeReport(h)); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
