package gateway

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runtime"
)

// wsAttachment sends a process's output to one WebSocket client. Its pump goroutine
// runs only while there is something to send: once caught up it asks the subscription
// to be notified and returns. A goroutine parked per idle client would cost it a stack
// (~4 KiB of RSS).
//
// The notification runs on the process's output goroutine, with the output buffered.
// When the output is small and the client's socket has room for it, it is sent right
// there (sendInline): a write that cannot wait, and a keystroke's echo reaches the
// client without waiting for a goroutine to be scheduled. Otherwise it starts a pump.
//
// The pump sends the ready message, then output, gaps and the exit, until the stream
// ends, the client goes away or the server shuts down. One sender (a pump or an inline
// send) runs at a time: the one that set pumping.
//
// Only the reader goroutine closes the connection with a status: coder/websocket's
// close handshake reads from the connection, which the reader may be peeking at
// (clientConn.waitReadable). A sender that wants the connection closed calls finish.
type wsAttachment struct {
	s      *Server
	ctx    context.Context // ends when the client goes away or the server shuts down
	cancel context.CancelFunc
	ww     *wsWriter
	sock   net.Conn // the client's connection, under ww's WebSocket
	sub    *runtime.Subscription
	start  int64
	// sandbox and process name the stream's process, for settling its exit.
	sandbox, process string
	mode             inputMode // the client's ?input=, told in the ready message

	mu      sync.Mutex
	idle    sync.Cond // signalled when pumping turns false
	pumping bool
	stopped bool           // no pump may start any more
	ready   bool           // the ready message was sent; only senders touch it, one at a time
	held    *runtime.Event // taken by an inline send, for the next pump to send
	notices []wsControl    // error messages for the client (notify), sent before more output
	// closeCode and closeReason are what finish asked the reader goroutine to close
	// the connection with (closeCode 0: nothing asked).
	closeCode   websocket.StatusCode
	closeReason string
}

const (
	// inlineMaxBytes is the most output an inline send takes; more is left to a pump.
	inlineMaxBytes = 1 << 10
	// wsFrameHeaderMax is the longest header of a frame from the server (unmasked).
	wsFrameHeaderMax = 10
)

// startPumpLocked starts a pump unless a sender runs or the attachment stopped.
func (a *wsAttachment) startPumpLocked() {
	if a.pumping || a.stopped {
		return
	}
	a.pumping = true
	a.spawnPump()
}

// spawnPump starts a pump goroutine for the caller, which set pumping.
func (a *wsAttachment) spawnPump() {
	a.s.bg.Add(1) // the reader goroutine holds the count above zero
	a.s.wsPumps.Add(1)
	go a.pump()
}

// wake is the subscription's notification: output or the exit arrived. It runs on the
// process's output goroutine: it sends a small output inline, or starts a pump.
func (a *wsAttachment) wake() {
	a.mu.Lock()
	if a.pumping || a.stopped {
		a.mu.Unlock()
		return
	}
	a.pumping = true
	a.mu.Unlock()
	if !a.sendInline() {
		a.spawnPump()
	}
}

// sendInline sends, on the caller's goroutine, the new output if it is at most
// inlineMaxBytes and the client's socket has room for it, so the write cannot wait.
// It reports whether it is done: the client caught up (and the next output notifies
// again), or the attachment ended. Otherwise the caller, still the sender, starts a
// pump; bulk output always goes that way, so the output goroutine goes back to reading
// while the pump writes.
func (a *wsAttachment) sendInline() bool {
	if !a.ready || a.noticePending() || a.sub.Pending() > inlineMaxBytes || !sendRoom(a.sock, inlineMaxBytes+wsFrameHeaderMax) {
		return false
	}
	ev, ok, err := a.sub.PollMax(inlineMaxBytes)
	switch {
	case err != nil: // the subscription closed
		a.park()
		return true
	case !ok:
		return a.caughtUp()
	case ev.Kind == runtime.EventExit:
		a.held = &ev // the pump sends it and closes: a close handshake waits
		return false
	}
	if err := a.s.writeWSEvent(a.ctx, a.ww, ev); err != nil {
		a.finishStalled(err)
		a.park()
		return true
	}
	return a.caughtUp()
}

// finish ends the attachment: the reader goroutine stops and, once the sender is done,
// closes the connection with code and reason (the first asked for wins).
func (a *wsAttachment) finish(code websocket.StatusCode, reason string) {
	a.mu.Lock()
	if a.closeCode == 0 {
		a.closeCode, a.closeReason = code, reason
	}
	a.mu.Unlock()
	a.cancel()
}

// finishStalled finishes with 1013 when err says the client read nothing for the
// write timeout; any other write error means the client or the server went away.
func (a *wsAttachment) finishStalled(err error) {
	if errors.Is(err, errStalled) {
		a.finish(websocket.StatusTryAgainLater, "client too slow")
	}
}

// closing returns what finish asked for; call it after stop.
func (a *wsAttachment) closing() (websocket.StatusCode, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closeCode, a.closeReason
}

// caughtUp ends a send with nothing left to send: the sender parks and asks to be
// notified. It reports false when output came meanwhile and the caller is the sender
// again, true when there is nothing more to do.
func (a *wsAttachment) caughtUp() bool {
	a.park() // first: the notification may start the next sender at once
	// A notice queued before the park found a sender running, so this one sends it;
	// one queued after started a sender of its own.
	if a.sub.Notify(a.wake) && !a.noticePending() {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pumping || a.stopped {
		return true
	}
	a.pumping = true
	return false
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
		ready := wsControl{Type: "ready", Offset: &a.start}
		if a.mode != inputBinary {
			ready.Input = a.mode
		}
		if err := writeControl(a.ctx, a.ww, ready); err != nil {
			a.finishStalled(err)
			a.park()
			return
		}
		a.ready = true
	}
	for {
		if c, ok := a.takeNotice(); ok {
			if err := writeControl(a.ctx, a.ww, c); err != nil {
				a.finishStalled(err)
				a.park()
				return
			}
			continue
		}
		ev, ok, err := a.next()
		if err != nil { // after the exit, or the subscription closed
			a.park()
			return
		}
		if !ok {
			if a.caughtUp() {
				return
			}
			continue
		}
		if ev.Kind == runtime.EventExit {
			a.s.settleExit(a.ctx, a.sandbox, a.process)
		}
		if err := a.s.writeWSEvent(a.ctx, a.ww, ev); err != nil {
			a.finishStalled(err)
			a.park()
			return
		}
		if ev.Kind == runtime.EventExit {
			a.finish(websocket.StatusNormalClosure, "")
			a.park()
			return
		}
	}
}

// next is the event to send next: one an inline send left, or the subscription's.
func (a *wsAttachment) next() (runtime.Event, bool, error) {
	if ev := a.held; ev != nil {
		a.held = nil
		return *ev, true, nil
	}
	return a.sub.Poll()
}
