package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestFailCommand: a fail entry marks the member down and moves its partitions in
// one step, or does nothing at all when one epoch is stale or a target is not alive.
func TestFailCommand(t *testing.T) {
	t.Parallel()
	three := ids(3)
	victim := three[0]
	tests := []struct {
		name    string
		moves   func(s *state) []move
		want    error
		applied bool
	}{
		{name: "all moves", applied: true, moves: func(s *state) []move {
			down, _ := s.setStatus(victim, StatusDown)
			m, _, _ := plan(down, 0, nil)
			return m
		}},
		{name: "down only", applied: true, moves: func(*state) []move { return nil }},
		{name: "stale epoch", want: ErrStaleEpoch, moves: func(s *state) []move {
			p := partitionOf(s, victim)
			return []move{{P: p, Owner: three[1], Expect: s.parts[p].Epoch + 1}}
		}},
		{name: "to itself", want: ErrUnknownMember, moves: func(s *state) []move {
			p := partitionOf(s, victim)
			return []move{{P: p, Owner: victim, Expect: s.parts[p].Epoch}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := placedFSM(t, 3)
			before := f.cur.Load()
			moves := tt.moves(before)
			r := f.Apply(&raft.Log{Index: 500, Type: raft.LogCommand, Data: encodeFail(victim, moves)})
			after := f.cur.Load()
			if !tt.applied {
				if err, _ := r.(error); !errors.Is(err, tt.want) || after != before {
					t.Fatalf("Apply = %v (state changed %v), want %v and no change", r, after != before, tt.want)
				}
				return
			}
			if r != nil {
				t.Fatalf("Apply = %v", r)
			}
			if after.members[victim].Status != StatusDown || after.index != 500 {
				t.Fatalf("status %s, index %d", after.members[victim].Status, after.index)
			}
			for _, m := range moves {
				if a := after.parts[m.P]; a.Owner != m.Owner || a.Epoch != 500 {
					t.Fatalf("partition %d: %+v", m.P, a)
				}
			}
			if len(moves) > 0 && after.owns(victim) {
				t.Fatal("the failed member still owns partitions")
			}
		})
	}
}

func partitionOf(s *state, id NodeID) int {
	for p, a := range s.parts {
		if a.Owner == id {
			return p
		}
	}
	return -1
}

// TestSnapshotV1 decodes a version 1 snapshot (before the index) as index 0.
func TestSnapshotV1(t *testing.T) {
	t.Parallel()
	f := placedFSM(t, 3)
	s := f.cur.Load()
	v4 := s.encode()
	e := encoder{}
	e.uvarint(s.index)
	// Version 1 has neither the index after the version byte nor, at the end,
	// version 3's key/value table and version 4's handoff section (empty: one zero
	// count each).
	v1 := append([]byte{1}, v4[1+len(e.b):len(v4)-2]...)
	got, err := decodeState(v1)
	if err != nil {
		t.Fatal(err)
	}
	if got.index != 0 || len(got.members) != 3 || got.parts[7] != s.parts[7] {
		t.Fatalf("v1 decoded to index %d, %d members", got.index, len(got.members))
	}
	if s.index == 0 {
		t.Fatal("placed state has no index")
	}
}

// TestPlanFenced: an orphan whose owner may still hold a lease stays put; an
// unassigned partition moves at once.
func TestPlanFenced(t *testing.T) {
	t.Parallel()
	s := placedFSM(t, 3).cur.Load()
	down, _ := s.setStatus("node-00", StatusDown)
	n := down.withPins()
	n.parts = append([]Assignment(nil), down.parts...)
	n.parts[partitionOf(down, "node-01")] = Assignment{} // unassigned
	all, _, _ := plan(n, 0, nil)
	fenced, _, pending := planFenced(n, 0, nil, func(id NodeID) bool { return id != "node-00" })
	if len(fenced) != 1 || n.parts[fenced[0].P].Owner != "" || pending != len(all)-1 {
		t.Fatalf("fenced plan moved %d (pending %d) of %d", len(fenced), pending, len(all))
	}
}

// TestLivenessRecord: nothing is movable before the barrier or within L + δ of the
// leadership's start or of the last heartbeat; beginFail excludes a second claim.
func TestLivenessRecord(t *testing.T) {
	t.Parallel()
	const grace = 400 * time.Millisecond
	var l liveness
	start := time.Hour
	l.start(start)
	if l.movable("a", start+time.Hour, grace) {
		t.Fatal("movable before the barrier")
	}
	l.setReady(7)
	tests := []struct {
		name  string
		heard time.Duration // 0: never
		at    time.Duration
		want  bool
	}{
		{name: "new leader, within grace", at: start + grace, want: false},
		{name: "new leader, past grace", at: start + grace + 1, want: true},
		{name: "heard, within grace", heard: start + time.Second, at: start + time.Second + grace, want: false},
		{name: "heard, past grace", heard: start + time.Second, at: start + time.Second + grace + 1, want: true},
		{name: "heard before the leadership", heard: start - time.Minute, at: start + grace, want: false},
	}
	for i, tt := range tests {
		id := NodeID(rune('a' + i))
		if tt.heard != 0 {
			l.touch(id, tt.heard)
		}
		if got := l.movable(id, tt.at, grace); got != tt.want {
			t.Errorf("%s: movable = %v", tt.name, got)
		}
		if got := l.beginFail(id, tt.at, grace); got != tt.want {
			t.Errorf("%s: beginFail = %v", tt.name, got)
		}
		if tt.want && l.beginFail(id, tt.at, grace) {
			t.Errorf("%s: a second beginFail succeeded", tt.name)
		}
		l.endFail(id)
	}
	l.touch("x", start+time.Second)
	if !l.recent("x", start+time.Second+time.Millisecond, time.Second) || l.recent("x", start+3*time.Second, time.Second) {
		t.Fatal("recent")
	}
	l.stop()
	if l.movable("a", start+time.Hour, grace) {
		t.Fatal("movable after stop")
	}
}
