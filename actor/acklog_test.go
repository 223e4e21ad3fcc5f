package actor

import (
	"sync"
	"testing"
)

// ackLog records, per sandbox, the event seqs a hammer test's posts were acknowledged
// with, and checks a stored log against them: seqs without gaps, every acknowledged
// post stored exactly once, and nothing else but the events other allows.
type ackLog struct {
	mu    sync.Mutex
	acked []map[uint64]bool
}

func newAckLog(sandboxes int) *ackLog {
	l := &ackLog{acked: make([]map[uint64]bool, sandboxes)}
	for i := range l.acked {
		l.acked[i] = map[uint64]bool{}
	}
	return l
}

// note records sandbox sb's post acknowledged with seq; twice is an error.
func (l *ackLog) note(t *testing.T, name string, sb int, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acked[sb][seq] {
		t.Errorf("%s: seq %d acknowledged twice", name, seq)
	}
	l.acked[sb][seq] = true
}

// check compares sandbox sb's stored events (named name) with its acknowledged posts
// (of type typ) and returns how many there were.
func (l *ackLog) check(t *testing.T, name string, sb int, evs []Event, typ string, other func(Event) bool) int {
	t.Helper()
	got := 0
	for j, e := range evs {
		if e.Seq != uint64(j+1) {
			t.Fatalf("%s: event %d has seq %d", name, j, e.Seq)
		}
		switch {
		case e.Type == typ && l.acked[sb][e.Seq]:
			got++
		case other(e):
		default:
			t.Fatalf("%s: stored event %d (%s) was never acknowledged", name, e.Seq, e.Type)
		}
	}
	if got != len(l.acked[sb]) {
		t.Fatalf("%s: %d acknowledged events stored, %d acknowledged", name, got, len(l.acked[sb]))
	}
	return got
}
