package gateway

import (
	"context"
	"sync"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runtime"
)

// wsAttachment sends a process's output to one WebSocket client. Its pump goroutine
// runs only while there is something to send: once caught up it asks the subscription
// to be notified and returns, and the notification starts a new one (on the output's
// own P, so it runs as soon as the output goroutine parks). A goroutine parked per idle
// client would cost it a stack (~4 KiB of RSS).
//
// The pump sends the ready message, then output, gaps and the exit, until the stream
// ends, the client goes away or the server shuts down. At most one pump runs at a time.
type wsAttachment struct {
	s     *Server
	ctx   context.Context // ends when the client goes away or the server shuts down
	ww    *wsWriter
	sub   *runtime.Subscription
	start int64

	mu      sync.Mutex
	idle    sync.Cond // signalled when pumping turns false
	pumping bool
	stopped bool // no pump may start any more
	ready   bool // the ready message was sent; only pumps touch it, one at a time
}

// startPumpLocked starts a pump unless one runs or the attachment stopped.
func (a *wsAttachment) startPumpLocked() {
	if a.pumping || a.stopped {
		return
	}
	a.pumping = true
	a.s.bg.Add(1) // the reader goroutine holds the count above zero
	a.s.wsPumps.Add(1)
	go a.pump()
}

// wake is the subscription's notification: output or the exit arrived. It runs on the
// process's output goroutine, so it only starts a pump.
func (a *wsAttachment) wake() {
	a.mu.Lock()
	a.startPumpLocked()
	a.mu.Unlock()
}

// stop waits for a running pump to return and keeps new ones from starting. The
// caller has ended ctx, so a pump stuck writing returns promptly.
func (a *wsAttachment) stop() {
	a.mu.Lock()
	a.stopped = true
	for a.pumping {
		a.idle.Wait()
	}
	a.mu.Unlock()
}

// park marks the pump as gone.
func (a *wsAttachment) park() {
	a.mu.Lock()
	a.pumping = false
	a.idle.Broadcast()
	a.mu.Unlock()
}

func (a *wsAttachment) pump() {
	defer a.s.bg.Done()
	defer a.s.wsPumps.Add(-1)
	if !a.ready {
		if err := writeControl(a.ctx, a.ww, wsControl{Type: "ready", Offset: &a.start}); err != nil {
			closeStalled(a.ww, err)
			a.park()
			return
		}
		a.ready = true
	}
	for {
		ev, ok, err := a.sub.Poll()
		if err != nil { // after the exit, or the subscription closed
			a.park()
			return
		}
		if !ok {
			a.park() // first: the notification may start the next pump at once
			// Notify calls back under the ring's lock and wake takes a.mu: never
			// call Notify holding a.mu.
			if a.sub.Notify(a.wake) {
				return
			}
			a.mu.Lock() // output came meanwhile: carry on, unless stopped
			if a.pumping || a.stopped {
				a.mu.Unlock()
				return
			}
			a.pumping = true
			a.mu.Unlock()
			continue
		}
		if err := a.s.writeWSEvent(a.ctx, a.ww, ev); err != nil {
			closeStalled(a.ww, err)
			a.park()
			return
		}
		if ev.Kind == runtime.EventExit {
			a.ww.conn.Close(websocket.StatusNormalClosure, "")
			a.park()
			return
		}
	}
}
