package actor

import (
	"context"
	"fmt"
	"sync"
)

// turnFunc is one turn: it runs on the actor goroutine and may touch the actor's state.
type turnFunc func(a *sbActor) (any, error)

// request is a mailbox entry. User requests come from API calls, are bounded by the
// mailbox size and pass admission; system requests (completions posted back by work
// running off the actor, timers, releases) use an unbounded queue, so work that
// finished is never refused.
type request struct {
	ctx  context.Context // the caller's, used only during the turn; nil for system requests
	fn   turnFunc
	done chan result // buffered 1, so the actor never blocks answering; nil: no answer
}

type result struct {
	v   any
	err error
}

// call runs fn as a turn of sandbox id's actor and waits for its answer, which is
// released only after the turn's writes are durable. A cancelled ctx returns ctx.Err()
// at once; the actor skips the turn if it has not started it yet, and never blocks on
// the abandoned answer.
func call[T any](ctx context.Context, n *Node, id string, fn func(a *sbActor) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	req := reqPool.Get().(*request)
	req.ctx, req.fn = ctx, func(a *sbActor) (any, error) { return fn(a) }
	for {
		a, err := n.actorFor(id)
		if err != nil {
			return zero, err
		}
		if a.runInline(req) {
			break
		}
		ok, err := a.enqueue(req)
		if err != nil {
			return zero, err
		}
		if ok {
			break
		}
		// The activation is passivating: wait until it has left the registry (its last
		// write is durable), then look up again.
		select {
		case <-a.stopped:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	select {
	case r := <-req.done:
		// The actor is done with req once it has answered: reuse it. An abandoned
		// request (below) is left to the garbage collector instead.
		req.ctx, req.fn = nil, nil
		reqPool.Put(req)
		if r.err != nil {
			return zero, r.err
		}
		v, _ := r.v.(T)
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

var reqPool = sync.Pool{New: func() any { return &request{done: make(chan result, 1)} }}

// post queues fn as a system turn for sandbox id, activating it if needed, without
// waiting. It is dropped, and post reports false, when the node is closing or
// admission refuses to activate the sandbox.
func (n *Node) post(id string, fn turnFunc) bool {
	for {
		a, err := n.actorFor(id)
		if err != nil {
			return false
		}
		if a.postSystem(&request{fn: fn}) {
			return true
		}
		<-a.stopped
	}
}

// ask queues fn as a system turn on activation a (not any later one: it completes
// work a started) and waits for its answer, released after commit, or ctx. If a has
// stopped, it returns ErrUnavailable.
func ask[T any](ctx context.Context, a *sbActor, fn func(a *sbActor) (T, error)) (T, error) {
	var zero T
	req := &request{done: make(chan result, 1), fn: func(a *sbActor) (any, error) { return fn(a) }}
	if !a.postSystem(req) {
		return zero, fmt.Errorf("%w: sandbox %q was deactivated", ErrUnavailable, a.id)
	}
	select {
	case r := <-req.done:
		if r.err != nil {
			return zero, r.err
		}
		v, _ := r.v.(T)
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// enqueue adds a user request. It returns false if this activation has stopped (the
// caller looks up again) and ErrMailboxFull if the mailbox is full.
func (a *sbActor) enqueue(r *request) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false, nil
	}
	select {
	case a.mb <- r:
		a.queued++
		a.signal()
		return true, nil
	default:
		return false, fmt.Errorf("%w: sandbox %q", ErrMailboxFull, a.id)
	}
}

// postSystem adds a system request; false if this activation has stopped.
func (a *sbActor) postSystem(r *request) bool {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false
	}
	a.sys = append(a.sys, r)
	a.queued++
	a.mu.Unlock()
	a.signal()
	return true
}

// signal wakes the actor's goroutine: a request was queued.
func (a *sbActor) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// postSelf queues fn on this activation only; dropped if it has stopped.
func (a *sbActor) postSelf(fn turnFunc) { a.postSystem(&request{fn: fn}) }

// finishWork runs fn, the completion of work that ran off the actor, as a system turn
// of this activation: on the calling goroutine when the actor is idle (see runInline),
// else queued; dropped if the activation has stopped. The caller must hold nothing a
// turn may need: it is called right after the work, from the request's goroutine.
func (a *sbActor) finishWork(fn turnFunc) {
	r := &request{fn: fn}
	if !a.runInline(r) {
		a.postSystem(r)
	}
}

func (a *sbActor) takeSystem(dst []*request) []*request {
	a.mu.Lock()
	dst = append(dst, a.sys...)
	clear(a.sys)
	a.sys = a.sys[:0]
	a.mu.Unlock()
	return dst
}

// resend hands a queued user request of a dropped activation to the current one
// (starting it). It never blocks: a full mailbox or a closing node answers the request
// with the error.
func (n *Node) resend(id string, r *request) {
	for {
		a, err := n.actorFor(id)
		if err != nil {
			r.done <- result{err: err}
			return
		}
		ok, err := a.enqueue(r)
		if err != nil {
			r.done <- result{err: err}
			return
		}
		if ok {
			return
		}
		<-a.stopped
	}
}
