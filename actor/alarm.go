package actor

import (
	"container/heap"
	"encoding/binary"
	"sync"
	"time"
)

// alarms is the node-wide timer heap: at most one alarm time per sandbox, one clock
// timer armed for the earliest. A due alarm is delivered by fire(id) (a system turn
// posted to the sandbox's actor, activating it if it was passivated). Safe for
// concurrent use; fire is called with no lock held.
type alarms struct {
	clock Clock
	fire  func(id string)

	mu      sync.Mutex // protects following
	h       alarmHeap
	byID    map[string]*alarmEntry
	timer   Stopper
	timerAt time.Time
	closed  bool
}

type alarmEntry struct {
	id    string
	at    time.Time
	index int
}

type alarmHeap []*alarmEntry

func (h alarmHeap) Len() int           { return len(h) }
func (h alarmHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h alarmHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *alarmHeap) Push(x any)        { e := x.(*alarmEntry); e.index = len(*h); *h = append(*h, e) }
func (h *alarmHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func newAlarms(c Clock, fire func(id string)) *alarms {
	return &alarms{clock: c, fire: fire, byID: map[string]*alarmEntry{}}
}

// set makes at the alarm time of id, replacing any earlier one.
func (s *alarms) set(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if e := s.byID[id]; e != nil {
		e.at = at
		heap.Fix(&s.h, e.index)
	} else {
		e := &alarmEntry{id: id, at: at}
		s.byID[id] = e
		heap.Push(&s.h, e)
	}
	s.rearmLocked()
}

// setIfAbsent sets id's alarm to at unless it has one.
func (s *alarms) setIfAbsent(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.byID[id] != nil {
		return
	}
	e := &alarmEntry{id: id, at: at}
	s.byID[id] = e
	heap.Push(&s.h, e)
	s.rearmLocked()
}

// at returns id's alarm time, if it has one.
func (s *alarms) at(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		return e.at, true
	}
	return time.Time{}, false
}

// clear removes id's alarm.
func (s *alarms) clear(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		heap.Remove(&s.h, e.index)
		delete(s.byID, id)
		s.rearmLocked()
	}
}

// len returns how many alarms are set.
func (s *alarms) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

func (s *alarms) rearmLocked() {
	if len(s.h) == 0 {
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		return
	}
	at := s.h[0].at
	if s.timer != nil && s.timerAt.Equal(at) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerAt = at
	s.timer = s.clock.AfterFunc(max(0, at.Sub(s.clock.Now())), s.onTimer)
}

func (s *alarms) onTimer() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := s.clock.Now()
	var due []string
	for len(s.h) > 0 && !s.h[0].at.After(now) {
		e := heap.Pop(&s.h).(*alarmEntry)
		delete(s.byID, e.id)
		due = append(due, e.id)
	}
	s.timer = nil
	s.rearmLocked()
	s.mu.Unlock()
	for _, id := range due {
		s.fire(id)
	}
}

func (s *alarms) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

func encodeAlarm(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

func decodeAlarm(v []byte) (time.Time, bool) {
	if len(v) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true
}

// refusedAlarmRetry is when an alarm that admission refused is looked at again, unless
// the owner's writes move it first (SandboxesChanged).
const refusedAlarmRetry = 30 * time.Second

// fireAlarm delivers a due alarm to the sandbox's actor. Every node holds the alarms
// of every stored sandbox; one this node may not run (Config.Admission refuses) is not
// activated here (actorFor): the alarm is the owner's to serve, and stays in the heap
// for the day this node owns the sandbox, looked at again after refusedAlarmRetry. If
// admission refuses only once the turn is reached, the activation ends unsaved
// (fence.go) and the heap is refilled from storage.
func (n *Node) fireAlarm(id string) {
	if !n.post(id, func(a *sbActor) (any, error) { a.onAlarm(); return nil, nil }) {
		n.alarms.setIfAbsent(id, n.cfg.Clock.Now().Add(refusedAlarmRetry)) // no-op once closed
	}
}
