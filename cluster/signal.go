package cluster

import (
	"context"
	"sync"
)

// changeSignal wakes the goroutines waiting for a value they poll to change (the
// published table, the applied marks): next returns a channel that the following
// broadcast closes. Take the channel before reading the value, so that a change
// between the read and the wait is not missed. The zero value is ready to use.
type changeSignal struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next broadcast; nil until someone waits
}

// next returns the channel the next broadcast closes.
func (c *changeSignal) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// broadcast wakes every waiter of the channel next returned so far.
func (c *changeSignal) broadcast() {
	c.mu.Lock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// until waits until cond holds, looking again after each broadcast. It returns
// cond's error, ctx's error once ctx ends, or ErrClosed once done is closed (nil
// done: never).
func (c *changeSignal) until(ctx context.Context, done <-chan struct{}, cond func() (bool, error)) error {
	for {
		ch := c.next()
		if ok, err := cond(); ok || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return ErrClosed
		}
	}
}
