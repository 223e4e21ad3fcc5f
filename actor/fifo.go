package actor

import (
	"context"
	"sync"
)

// fifoGate runs holders one at a time in ticket order: the order of a session's
// commands in the mailbox. Tickets are taken on the actor goroutine; wait and finish
// run on callers' goroutines. A caller that gives up (ctx) finishes its ticket at once,
// so it never holds up those behind it and no goroutine is left waiting for it. Safe
// for concurrent use.
type fifoGate struct {
	mu     sync.Mutex // protects following
	next   uint64     // next ticket to hand out
	served uint64     // every ticket below served has finished
	done   map[uint64]bool
	wake   chan struct{} // closed when served advances
}

func (g *fifoGate) ticket() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.next
	g.next++
	return t
}

// wait blocks until every ticket before t has finished, or ctx ends.
func (g *fifoGate) wait(ctx context.Context, t uint64) error {
	for {
		g.mu.Lock()
		if g.served == t {
			g.mu.Unlock()
			return nil
		}
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		w := g.wake
		g.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// finish marks t done; call it exactly once per ticket, whether or not it ran.
func (g *fifoGate) finish(t uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done == nil {
		g.done = map[uint64]bool{}
	}
	g.done[t] = true
	advanced := false
	for g.done[g.served] {
		delete(g.done, g.served)
		g.served++
		advanced = true
	}
	if advanced && g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
}
