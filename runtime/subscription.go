package runtime

import (
	"context"
	"io"
	"sync"
	"time"
)

// SubscribeOptions are the settings of a subscription made with SubscribeWith.
type SubscribeOptions struct {
	// Hold makes the subscriber a live reader the process waits for: while it is a
	// whole ring behind, the process's output is not read (the process blocks in its
	// writes, as on a terminal) until it reads on. A holder that takes nothing from the
	// ring for HoldBound while the process waits for it stops holding: output goes on
	// without it, and it gets a gap event when it reads again (then holds again).
	// Without Hold, a subscriber that falls behind only gets a gap.
	Hold bool
	// HoldBound bounds how long a holder that makes no progress keeps the process
	// waiting. 0 means DefaultHoldBound.
	HoldBound time.Duration
	// Progress, when set, tells whether the holder's own reader took anything since it
	// was last asked, for a holder that takes its output from the ring in large pieces
	// and hands them on more slowly (a network connection whose peer reads slowly:
	// the ring sees no take while a piece drains). It is asked when the holder would
	// be released; a true answer counts as progress. It is called with the ring
	// locked: it must be quick and must not use the subscription.
	Progress func() bool
}

// Subscribe returns a subscription to the process's output from offset from; from < 0
// means the current end (live output only), and from beyond the end is the end. The
// subscriber does not hold the process back (see SubscribeWith).
func (p *Process) Subscribe(from int64) *Subscription {
	return p.SubscribeWith(from, SubscribeOptions{})
}

// SubscribeWith is Subscribe with options: SubscribeOptions.Hold makes a live reader
// that the process waits for, within a bound.
func (p *Process) SubscribeWith(from int64, o SubscribeOptions) *Subscription {
	if _, end := p.ring.offsets(); from < 0 || from > end {
		from = end
	}
	p.attached.Add(1)
	s := &Subscription{p: p, pos: from, closed: make(chan struct{})}
	if o.Hold {
		bound := o.HoldBound
		if bound <= 0 {
			bound = DefaultHoldBound
		}
		s.hold = &holder{pos: from, last: time.Now(), bound: bound, progress: o.Progress}
		p.ring.addHolder(s.hold)
	}
	return s
}

// Subscription delivers a process's events in offset order: a gap if the asked-for
// bytes already left the ring, the buffered output, live output, then the exit. After
// the exit event, and after Close, Next returns io.EOF. A subscriber that falls behind
// the ring gets a gap event with the exact range it missed. A plain subscriber never
// slows the process or other subscribers; a holding one (SubscribeOptions.Hold) makes
// the process wait for it while it keeps reading, and for at most its bound when it
// stops.
//
// One goroutine calls Next; Close is safe from any goroutine and idempotent.
type Subscription struct {
	p        *Process
	pos      int64
	hold     *holder // nil unless the subscriber holds the process back
	exitSent bool
	once     sync.Once
	closed   chan struct{}
}

// Next returns the next event. It blocks until there is one, ctx is done or the
// subscription is closed.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		ev, wait, err := s.take(maxEventBytes)
		if err != nil || wait == nil {
			return ev, err
		}
		select {
		case <-wait:
		case <-s.closed:
			return Event{}, io.EOF
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Poll returns the next event if there is one, without waiting: ok is false when there
// is none yet. Like Next, it returns io.EOF after the exit event and after Close. Use
// Poll and Notify to follow a process without a goroutine parked per subscriber.
func (s *Subscription) Poll() (ev Event, ok bool, err error) {
	return s.PollMax(maxEventBytes)
}

// PollMax is Poll with at most max (> 0) bytes in an output event; the rest of the
// output comes with the next call.
func (s *Subscription) PollMax(max int) (ev Event, ok bool, err error) {
	ev, wait, err := s.take(int64(max))
	return ev, err == nil && wait == nil, err
}

// take returns the next event, with at most max bytes of output, and advances past it,
// or, when there is none yet, a channel closed by the next change.
func (s *Subscription) take(max int64) (Event, <-chan struct{}, error) {
	select {
	case <-s.closed:
		return Event{}, nil, io.EOF
	default:
	}
	if s.exitSent {
		return Event{}, nil, io.EOF
	}
	ev, next, wait, ok := s.p.ring.read(s.hold, s.pos, max)
	if !ok {
		return Event{}, wait, nil
	}
	s.pos = next
	if ev.Kind == EventExit {
		s.exitSent = true
	}
	return ev, nil, nil
}

// Notify arranges for fn to be called once, when Poll has an event again (new output
// or the exit). If Poll has one already, it reports false and registers nothing. fn
// runs on the goroutine that writes the output, once the output is buffered: it may
// use the subscription (Poll, Notify), but the process's output waits for it, so it
// must not block. Close cancels the registration. Call Notify from the goroutine that
// calls Poll.
func (s *Subscription) Notify(fn func()) bool {
	select {
	case <-s.closed:
		return false
	default:
	}
	return s.p.ring.notifyAt(s.pos, s, fn)
}

// Pending returns how many bytes of output the subscription is behind the newest
// (those already dropped from the buffer included). Call it from the goroutine that
// calls Poll.
func (s *Subscription) Pending() int64 { return s.p.ring.pending(s.pos) }

// Offset returns the offset of the next byte the subscription will deliver. Call it from
// the goroutine that calls Next.
func (s *Subscription) Offset() int64 { return s.pos }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.p.ring.forget(s)
		if s.hold != nil {
			s.p.ring.removeHolder(s.hold)
		}
		s.p.attached.Add(-1)
	})
}
