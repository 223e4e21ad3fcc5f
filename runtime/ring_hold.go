package runtime

import "time"

// DefaultHoldBound is how long a holding subscriber (SubscribeOptions.Hold) that makes
// no progress may keep its process waiting, when SubscribeOptions.HoldBound is 0.
const DefaultHoldBound = 5 * time.Second

// holder is the ring's view of a live subscriber that holds the writer back: the
// writer does not overwrite a byte a holder has not read yet, for as long as the
// holder keeps reading. Its fields are guarded by the ring's mutex.
type holder struct {
	pos      int64         // the next offset it reads
	last     time.Time     // when it last took something from the ring
	bound    time.Duration // how long it may hold the writer without progress
	released bool          // it outstayed bound: it no longer holds (until it reads again)
	progress func() bool   // SubscribeOptions.Progress, or nil
	// baselined: progress was asked once since h last advanced, when it began to
	// keep the writer waiting, so that its next answer covers the wait only.
	baselined bool
}

// addHolder registers a holder at pos.
func (r *ring) addHolder(h *holder) {
	r.mu.Lock()
	if r.holders == nil {
		r.holders = make(map[*holder]struct{})
	}
	r.holders[h] = struct{}{}
	r.mu.Unlock()
}

// removeHolder forgets h and lets a waiting writer look again.
func (r *ring) removeHolder(h *holder) {
	r.mu.Lock()
	delete(r.holders, h)
	r.roomChangedLocked()
	r.mu.Unlock()
}

// advancedLocked records that h took the ring's bytes up to next.
func (r *ring) advancedLocked(h *holder, next int64) {
	h.pos, h.released, h.baselined = next, false, false
	h.last = time.Now()
	r.roomChangedLocked()
}

// roomChangedLocked wakes a writer waiting for room.
func (r *ring) roomChangedLocked() {
	if r.room != nil {
		close(r.room)
		r.room = nil
	}
}

// roomLocked returns how many bytes may be written without dropping one a holder has
// not read (the ring's size when none holds), and, when that is less than need, the
// time at which the first holder that keeps it so stops holding. A holder that has made
// no progress for its bound since the writer began to wait is released here.
func (r *ring) roomLocked(need int) (room int, deadline time.Time) {
	if len(r.holders) == 0 {
		return r.max, time.Time{}
	}
	low := r.end
	var now time.Time
	for h := range r.holders {
		if h.released {
			continue
		}
		pos := max(h.pos, r.start)
		if r.end-pos <= int64(r.max-need) {
			low = min(low, pos)
			continue
		}
		// h leaves less than need: the writer waits for it, within its bound, counted
		// from its last progress or from when the writer began to wait, if later (a
		// reader that was idle and caught up did not stall anything).
		if now.IsZero() {
			now = time.Now()
			if r.blockedSince.IsZero() {
				r.blockedSince = now
			}
		}
		if h.progress != nil && !h.baselined {
			h.progress() // what its reader took before it held the writer does not count
			h.baselined = true
		}
		until := later(h.last, r.blockedSince).Add(h.bound)
		if !now.Before(until) && h.progress != nil && h.progress() {
			// Its reader took bytes it had taken from the ring: it is reading, slowly.
			h.last = now
			until = now.Add(h.bound)
		}
		if !now.Before(until) {
			h.released = true
			continue
		}
		low = min(low, pos)
		if deadline.IsZero() || until.Before(deadline) {
			deadline = until
		}
	}
	room = r.max - int(r.end-low)
	if room >= need {
		r.blockedSince = time.Time{}
	}
	return room, deadline
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// resumeRoom is the room a waiting writer waits for (or the ring's quarter, if less):
// resuming at the first free byte would wake it for every read of the holder, and
// have it read the process in slivers.
const resumeRoom = 64 << 10

// waitRoom waits until the writer may write again without dropping a byte a holder has
// not read: a holder read (until resumeRoom is free), left or outstayed its bound. It
// returns the room, or 0 if stop was closed first.
func (r *ring) waitRoom(stop <-chan struct{}) int {
	want := max(min(resumeRoom, r.max/4), 1)
	var t *time.Timer
	r.mu.Lock()
	r.enterWaitLocked()
	defer func() {
		r.mu.Lock()
		r.leaveWaitLocked()
		r.mu.Unlock()
		if t != nil {
			t.Stop()
		}
	}()
	for {
		room, deadline := r.roomLocked(want)
		if room >= want || deadline.IsZero() {
			r.mu.Unlock()
			return room
		}
		if r.room == nil {
			r.room = make(chan struct{})
		}
		ch := r.room
		r.mu.Unlock()
		if d := time.Until(deadline); t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-ch:
		case <-t.C:
		case <-stop:
			return 0
		}
		r.mu.Lock()
	}
}

// enterWaitLocked and leaveWaitLocked count the writers waiting for room and the time
// during which at least one waited (see heldFor).
func (r *ring) enterWaitLocked() {
	if r.waiters == 0 {
		r.waitStart = time.Now()
	}
	r.waiters++
}

func (r *ring) leaveWaitLocked() {
	r.waiters--
	if r.waiters == 0 {
		r.heldTotal += time.Since(r.waitStart)
	}
}

// heldFor returns for how long, in all, writers have waited for holders.
func (r *ring) heldFor() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.heldTotal
	if r.waiters > 0 {
		d += time.Since(r.waitStart)
	}
	return d
}
