package plugins

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// callContext is the context every hook call on one instance runs under. It ends when
// a call overruns its deadline (the host's [watchdog] ends it) or its caller's context
// ends; wazero, with close-on-context-done, then stops the guest and closes the
// instance.
//
// It replaces a context.WithTimeout per call, which costs a timer, a lazily made
// channel and five allocations, about 0.7 µs (a third of a whole WAT decision). A call
// on a callContext stores its deadline for the watchdog to see, about 0.1 µs. A
// caller's context that can be canceled adds a context.AfterFunc registration, about
// 0.25 µs.
//
// Lifecycle, on the goroutine that owns the instance:
//  1. newCallContext makes it, idle, watched by w.
//  2. start arms it for one call; the call runs under it.
//  3. stop disarms it. If it ended (or is ending), stop reports false and the instance
//     must be discarded: once ended it stays ended.
//  4. close stops the watching when the instance is closed.
//
// Done and Err are safe for concurrent use (wazero calls them from its own goroutine);
// the other methods belong to the owner.
type callContext struct {
	w          *watchdog
	parent     context.Context // the caller's, between start and stop
	due        time.Time       // the current call's deadline
	stopParent func() bool     // unregisters from parent; nil if parent cannot end
	done       chan struct{}
	err        atomic.Pointer[error] // set, once, just before done is closed

	// deadline is due in Unix nanoseconds while a call runs, for the watchdog; 0 when
	// idle; deadlineTaken once the watchdog has taken it to end the call.
	deadline atomic.Int64
}

const deadlineTaken = -1

var _ context.Context = (*callContext)(nil)

func newCallContext(w *watchdog) *callContext {
	c := &callContext{w: w, done: make(chan struct{})}
	w.add(c)
	return c
}

// start arms c for one call that may run for timeout, under parent.
func (c *callContext) start(parent context.Context, timeout time.Duration) {
	c.parent = parent
	c.due = time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(c.due) {
		c.due = d
	}
	c.deadline.Store(c.due.UnixNano())
	c.w.watch()
	if parent.Done() != nil {
		if err := parent.Err(); err != nil {
			c.end(err) // so the call does not start at all
		}
		c.stopParent = context.AfterFunc(parent, func() { c.end(parent.Err()) })
	}
}

// stop disarms c after a call and reports whether it is still usable, that is, did not
// end during the call or while being stopped.
func (c *callContext) stop() bool {
	ok := c.deadline.Swap(0) != deadlineTaken
	if c.stopParent != nil {
		if !c.stopParent() {
			ok = false
		}
		c.stopParent = nil
	}
	c.parent = nil
	return ok && c.err.Load() == nil
}

// expire ends c if its call is still the one due at deadline and now is past it; the
// watchdog calls it.
func (c *callContext) expire(deadline, now int64) {
	if now >= deadline && c.deadline.CompareAndSwap(deadline, deadlineTaken) {
		c.end(context.DeadlineExceeded)
	}
}

// close stops the watching of c; its instance is being closed.
func (c *callContext) close() { c.w.remove(c) }

// end ends c with err, once.
func (c *callContext) end(err error) {
	if err == nil { // a context that broke its contract: still end
		err = context.Canceled
	}
	if c.err.CompareAndSwap(nil, &err) {
		close(c.done)
	}
}

// Deadline implements context.Context: the end of the current call's time.
func (c *callContext) Deadline() (time.Time, bool) { return c.due, true }

// Done implements context.Context.
func (c *callContext) Done() <-chan struct{} { return c.done }

// Err implements context.Context: context.DeadlineExceeded when a call overran (or its
// caller's deadline passed), context.Canceled when its caller gave up.
func (c *callContext) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Value implements context.Context with the caller's values, for host functions.
func (c *callContext) Value(key any) any {
	if c.parent == nil {
		return nil
	}
	return c.parent.Value(key)
}

// errLate is the cause of a call that answered while its context was ending.
var errLate = errors.New("plugins: the answer came as the call was stopped")
