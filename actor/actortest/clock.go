// Package actortest holds test helpers for code that uses package actor: a fake Clock.
// It is imported by tests only.
package actortest

import (
	"sort"
	"sync"
	"time"
)

// Clock is a manually advanced clock implementing actor.Clock. All methods are safe for
// concurrent use. Callbacks due at an Advance run synchronously on the goroutine that
// called Advance, in time order, after the clock's lock is released.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]*timer
}

type timer struct {
	c  *Clock
	id int
	at time.Time
	f  func()
}

// NewClock returns a fake clock set to start (the zero time means 2026-01-01 UTC).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Clock{now: start, timers: map[int]*timer{}}
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run once the clock is advanced by d or more. The result's
// concrete type has a Stop() bool method, as actor.Stopper requires.
func (c *Clock) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, id: c.seq, at: c.now.Add(d), f: f}
	c.timers[t.id] = t
	return t
}

// Stop cancels the timer; it reports whether it was still pending.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t.id]
	delete(t.c.timers, t.id)
	return ok
}

// Advance moves the clock forward by d and runs every callback that became due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	var due []*timer
	for id, t := range c.timers {
		if !t.at.After(now) {
			due = append(due, t)
			delete(c.timers, id)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if due[i].at.Equal(due[j].at) {
			return due[i].id < due[j].id
		}
		return due[i].at.Before(due[j].at)
	})
	for _, t := range due {
		t.f()
	}
}

// Pending returns how many callbacks are scheduled and not yet run.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
