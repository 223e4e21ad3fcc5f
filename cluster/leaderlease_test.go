package cluster

import (
	"bytes"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// floorLog records, for the lease harness, every member a leadership counted from
// its last lease entry (Config.onFloor).
type floorLog struct {
	mu     sync.Mutex
	floors []floorAt
}

type floorAt struct {
	node NodeID // the leader that counted
	of   NodeID // the member counted
	at   time.Duration
}

func (l *floorLog) add(node, of NodeID, at time.Duration) {
	l.mu.Lock()
	l.floors = append(l.floors, floorAt{node, of, at})
	l.mu.Unlock()
}

// of returns the floors counted for member id.
func (l *floorLog) of(id NodeID) []floorAt {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []floorAt
	for _, f := range l.floors {
		if f.of == id {
			out = append(out, f)
		}
	}
	return out
}

// TestLivenessFloor: a member with a floor counts as heard at the floor, earlier
// than the leadership's start; the others still wait from the start; a heartbeat
// heard later than the floor counts from then.
func TestLivenessFloor(t *testing.T) {
	t.Parallel()
	const grace = 400 * time.Millisecond
	start := time.Hour
	floor := start - 300*time.Millisecond
	tests := []struct {
		name  string
		id    NodeID
		heard time.Duration // 0: never
		at    time.Duration
		want  bool
	}{
		{name: "floored, within grace of the floor", id: "old", at: floor + grace, want: false},
		{name: "floored, past grace of the floor", id: "old", at: floor + grace + 1, want: true},
		{name: "not floored, past grace of the floor", id: "other", at: floor + grace + 1, want: false},
		{name: "not floored, past grace of the start", id: "other", at: start + grace + 1, want: true},
		{name: "floored, heard after the floor", id: "old", heard: start + 100*time.Millisecond, at: floor + grace + 1, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l liveness
			l.start(start)
			l.floor("old", floor)
			l.setReady(3)
			if tt.heard != 0 {
				l.touch(tt.id, tt.heard)
			}
			if got := l.movable(tt.id, tt.at, grace); got != tt.want {
				t.Fatalf("movable = %v", got)
			}
			if d := l.nextDeadline(floor, grace); d > grace+time.Millisecond {
				t.Fatalf("next deadline %v after the floor, want the floor's", d)
			}
		})
	}
	var l liveness
	l.start(start)
	l.floor("old", floor)
	l.start(start + time.Minute) // a new leadership forgets the floors
	l.setReady(4)
	if l.movable("old", start+time.Minute+grace, grace) {
		t.Fatal("a floor survived a new leadership")
	}
}

// TestOnlyTerms: the scan that lets a new leader trust the last lease entry accepts a
// log whose entries after it are of its term up to the new leader's first entry, and
// refuses any other term between, a gap it cannot read, or a note past the log.
func TestOnlyTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		terms []uint64 // terms of entries 1..n
		index uint64   // the lease entry
		want  bool
	}{
		{name: "same term then the new one", terms: []uint64{2, 2, 2, 2, 5, 5}, index: 2, want: true},
		{name: "lease entry last before the new term", terms: []uint64{2, 2, 5}, index: 2, want: true},
		{name: "no entry of the new term yet", terms: []uint64{2, 2, 2}, index: 2, want: true},
		{name: "a leadership between", terms: []uint64{2, 2, 3, 5}, index: 2, want: false},
		{name: "a later term between, after the new one", terms: []uint64{2, 5, 4}, index: 1, want: true},
		{name: "note past the log", terms: []uint64{2}, index: 3, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := openLogStore(filepath.Join(t.TempDir(), "raft.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var logs []*raft.Log
			for i, term := range tt.terms {
				logs = append(logs, &raft.Log{Index: uint64(i + 1), Term: term, Type: raft.LogCommand, Data: []byte{1}})
			}
			if err := s.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			if got := onlyTerms(s, tt.index, 2, 5); got != tt.want {
				t.Fatalf("onlyTerms = %v", got)
			}
		})
	}
	s, err := openLogStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.StoreLogs([]*raft.Log{{Index: 1, Term: 2}, {Index: 3, Term: 2}}); err != nil {
		t.Fatal(err)
	}
	if onlyTerms(s, 1, 2, 5) {
		t.Fatal("a gap in the log counted as the same term")
	}
}

// TestLeaseNote: the FSM notes the last lease entry with its term, index and apply
// time, also on a replica that stopped applying; an entry it cannot read and a
// restored snapshot clear the note.
func TestLeaseNote(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	lease := func(index, term uint64, data []byte) *raft.Log {
		return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data}
	}
	before := mono()
	if r := f.Apply(lease(5, 2, encodeLeaderLease("n1"))); r != nil {
		t.Fatalf("Apply = %v", r)
	}
	got := f.leases.get()
	if got.node != "n1" || got.term != 2 || got.index != 5 || got.at < before || got.at > mono() {
		t.Fatalf("note %+v", got)
	}
	f.Apply(lease(6, 2, append(encodeLeaderLease("n2"), 0))) // a trailing byte: unreadable
	if got := f.leases.get(); got.node != "" {
		t.Fatalf("an unreadable entry left the note %+v", got)
	}
	f.Apply(&raft.Log{Index: 7, Term: 2, Type: raft.LogCommand, Data: []byte{0x7f}}) // unknown: the replica stops
	if f.err() == nil {
		t.Fatal("the replica did not stop on an unknown command")
	}
	f.Apply(lease(8, 3, encodeLeaderLease("n3")))
	if got := f.leases.get(); got.node != "n3" || got.index != 8 {
		t.Fatalf("a stopped replica's note %+v", got)
	}

	b := snapshotBytes(t, testFSM(t))
	g := testFSM(t)
	g.Apply(lease(5, 2, encodeLeaderLease("n1")))
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	if got := g.leases.get(); got.node != "" {
		t.Fatalf("the note survived a restore: %+v", got)
	}
	if encodeLeaderLease("x")[0] != byte(cmdLeaderLease) || cmdLeaderLease&cmdIgnorable == 0 {
		t.Fatal("the lease command must be ignorable by older replicas")
	}
}
