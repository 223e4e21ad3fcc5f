package actor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// load reads the sandbox's durable state; a missing record leaves the actor absent.
// Processes recorded as running that no runtime runs any more are recorded as exited,
// and an arrival from another node is recorded, by the first turn (moved.go). After a
// failed commit of the sandbox, load also resets the node's indexes of it from what
// it read (unsettled.go).
func (a *sbActor) load() error {
	a.epoch = a.n.epoch(a.id) // before reading: what is read is at least that new
	err := a.n.store.Read(context.Background(), a.id, func(r Reader) error {
		m := r.Get(keyMeta)
		if m == nil {
			return nil
		}
		rec := new(sandboxRec)
		if err := json.Unmarshal(m, rec); err != nil {
			return fmt.Errorf("decode sandbox record: %w", err)
		}
		a.rec = rec
		a.alarmAt, _ = decodeAlarm(r.Get(keyAlarm))
		a.savedAlarm = a.alarmAt
		a.loadCounters(r)
		a.loadSizes(r)
		return a.sb.load(a, r)
	})
	if err != nil {
		return err
	}
	a.settleIndexes()
	a.settleDeleted() // a delete whose commit failed, or whose files a crash kept
	if a.mustArrive() {
		a.postSelf(func(a *sbActor) (any, error) { a.arriveOnce(); return nil, nil })
	}
	return nil
}

// arriveOnce runs arrive if no turn ran it yet: an alarm delivered with the
// activation may come first, and must not hibernate or expire the sandbox before the
// processes a crash ended are recorded as exited.
func (a *sbActor) arriveOnce() {
	if a.mustArrive() {
		a.arrive()
	}
}

// loadCounters reads the event and message counters. The queue's length stored
// with them is not read: loadSizes counts the queued messages (logbytes.go).
func (a *sbActor) loadCounters(r Reader) {
	if c := r.Get(keyCounters); len(c) >= 16 {
		a.evSeq, a.msgSeq = binary.BigEndian.Uint64(c), binary.BigEndian.Uint64(c[8:])
	}
}

// saveCounters stores the event and message counters, and the queue's length, which
// this version only writes (for a node of an older version that reads it).
func (a *sbActor) saveCounters() {
	c := binary.BigEndian.AppendUint64(make([]byte, 0, 24), a.evSeq)
	c = binary.BigEndian.AppendUint64(c, a.msgSeq)
	a.write().Put(keyCounters, binary.BigEndian.AppendUint64(c, uint64(a.msgCount)))
}

// nextAlarm is the sandbox's next lifecycle deadline: idle TTL while running, max
// duration until expired.
func (a *sbActor) nextAlarm() time.Time {
	if a.rec == nil {
		return time.Time{}
	}
	b := a.rec.Budget.budget()
	end := a.rec.CreatedAt.Add(b.MaxDuration)
	switch a.rec.State {
	case StateRunning:
		idle := a.lastActive().Add(b.IdleTTL)
		if a.attached > 0 || a.inflight > 0 {
			idle = a.now().Add(b.IdleTTL) // busy: look again one TTL later
		}
		if idle.Before(end) {
			return idle
		}
		return end
	case StateHibernated:
		return end
	}
	return time.Time{}
}

// rearm schedules the next alarm if it changed, and persists it when that matters.
// Activity pushes the idle deadline later on almost every request; a stored alarm that
// is earlier than needed only causes an early wake that re-arms, so a later alarm is
// written only when the stored one has already passed. That keeps requests free of a
// durable write (an fsync) while a restarted node still wakes every actor in time.
func (a *sbActor) rearm() {
	at := a.nextAlarm()
	if at.Equal(a.alarmAt) {
		return
	}
	a.alarmAt = at
	if at.IsZero() {
		a.n.alarms.clear(a.id)
		if !a.savedAlarm.IsZero() {
			a.write().Delete(keyAlarm)
			a.savedAlarm = time.Time{}
		}
		return
	}
	a.n.alarms.set(a.id, at)
	if a.savedAlarm.IsZero() || at.Before(a.savedAlarm) || !a.savedAlarm.After(a.now()) {
		a.write().Put(keyAlarm, encodeAlarm(at))
		a.savedAlarm = at
	}
}

// onAlarm is the alarm turn: expire at max duration, hibernate after idle TTL.
func (a *sbActor) onAlarm() {
	a.alarmAt = time.Time{} // the heap entry was consumed
	if a.rec == nil {
		return
	}
	a.arriveOnce()
	a.pruneExited()
	now := a.now()
	b := a.rec.Budget.budget()
	switch a.rec.State {
	case StateRunning, StateHibernated:
		if !now.Before(a.rec.CreatedAt.Add(b.MaxDuration)) {
			a.expire()
			return
		}
	}
	if a.rec.State == StateRunning && a.attached == 0 && a.inflight == 0 &&
		!now.Before(a.lastActive().Add(b.IdleTTL)) {
		a.hibernate()
	}
	a.rearm()
}

// hibernate ends every process (sessions and terminals are remembered and restarted
// on the next request that needs them) and moves to "hibernated".
func (a *sbActor) hibernate() {
	a.endWork(true)
	a.unmountDisk()
	a.setState(StateHibernated, "")
	a.emit("sandbox.hibernated", nil)
}

// expire ends every process and moves to "expired": no new work is accepted.
func (a *sbActor) expire() {
	a.endWork(true)
	a.setState(StateExpired, "")
	a.emit("sandbox.expired", nil)
	a.rearm()
}

// fail ends every process and moves to "failed" with reason. (Used when the runtime
// cannot be started for the sandbox.)
func (a *sbActor) fail(reason string) {
	a.endWork(true)
	a.setState(StateFailed, reason)
	a.emit("sandbox.failed", map[string]string{"reason": reason})
	a.rearm()
}

func (a *sbActor) setState(s, reason string) {
	a.rec.State = s
	a.rec.FailReason = reason
	a.saveRec()
	a.dirty = true
}

// wakeForWork is called by every turn that starts work: it refuses work on expired
// and failed sandboxes, wakes a hibernated one (event sandbox.woke), and records
// activity.
func (a *sbActor) wakeForWork() error {
	if a.rec == nil {
		return notFound("sandbox", a.id)
	}
	switch a.rec.State {
	case StateExpired:
		return fmt.Errorf("%w: sandbox %q", ErrExpired, a.id)
	case StateFailed:
		return fmt.Errorf("%w: sandbox %q failed: %s", ErrConflict, a.id, a.rec.FailReason)
	case StateHibernated:
		a.setState(StateRunning, "")
		a.emit("sandbox.woke", nil)
		a.touch()
		a.rearm()
		return nil
	}
	// Activity only moves the idle deadline later, so the armed alarm is early, not
	// late: it fires, onAlarm sees the activity and re-arms. No write per request.
	a.touch()
	return nil
}

// exists returns NotFound for an absent sandbox.
func (a *sbActor) exists() error {
	if a.rec == nil {
		return notFound("sandbox", a.id)
	}
	return nil
}
