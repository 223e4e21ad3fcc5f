package nsinit

import "sync/atomic"

// initLeaseSender pushes an Init's lease deadline to the init. Renew only records the
// deadline and wakes one goroutine of the Init, which sends the latest deadline in one
// small frame; renewals made while a frame is on its way are coalesced into the next.
// So Renew never blocks, however slow or dead the init: its frames wait in the socket
// (then in the sender) instead, and Close ends the sender.
type initLeaseSender struct {
	until atomic.Int64  // the latest deadline given, CLOCK_BOOTTIME ns; 0 without a lease
	sent  atomic.Int64  // the latest deadline sent to the init (the config frame's first)
	kick  chan struct{} // one pending wake-up; nil without a lease
	done  chan struct{} // closed when the sender returned; nil without a lease
}

// start records the first deadline (sent with the config) and starts the sender.
func (s *initLeaseSender) start(in *Init, until int64) {
	s.until.Store(until)
	s.sent.Store(until)
	s.kick, s.done = make(chan struct{}, 1), make(chan struct{})
	go s.loop(in)
}

// Renew extends the init's lease (Config.Lease) to until, in nanoseconds of
// CLOCK_BOOTTIME (Now), if that is later than its deadline: a sandbox fenced because
// its lease ran out is thawed once the init hears it. It does nothing without a lease.
// It never blocks: the deadline goes out in the background (see initLeaseSender), and
// every Spawn carries the latest one too, so a spawn is never refused for a renewal
// still on its way. Safe for concurrent use.
func (in *Init) Renew(until int64) {
	s := &in.lease
	if s.kick == nil {
		return
	}
	for {
		old := s.until.Load()
		if until <= old {
			return
		}
		if s.until.CompareAndSwap(old, until) {
			break
		}
	}
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is pending: the sender will read the new deadline
	}
}

// loop sends the latest deadline whenever it changed, until the init is gone (its
// reader returned, on Close or the init's exit) or a send fails.
func (s *initLeaseSender) loop(in *Init) {
	defer close(s.done)
	for {
		select {
		case <-s.kick:
		case <-in.readOK:
			return
		}
		until := s.until.Load()
		if until <= s.sent.Load() {
			continue
		}
		if err := in.c.send(&frame{Op: opLease, Lease: until}, nil, nil); err != nil {
			return // Close set the socket's deadline, or the init is gone
		}
		s.sent.Store(until)
	}
}

// wait waits for the sender to return, once the Init's reader has; a no-op without a
// lease.
func (s *initLeaseSender) wait() {
	if s.done != nil {
		<-s.done
	}
}
