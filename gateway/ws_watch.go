package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// errStalled is the error of a WebSocket write to a client the write watch gave up on.
var errStalled = errors.New("client read nothing for the write timeout")

// wsWriter writes the frames of one WebSocket client under the server's write watch.
type wsWriter struct {
	conn    *websocket.Conn
	since   atomic.Int64 // Unix nanoseconds when the write in progress began; 0 when none
	stalled atomic.Bool  // a write outlasted the timeout: the client is to be closed
	// progress, when not nil, tells whether the client took bytes since it was last
	// asked (connProgress): a write that outlasts the timeout while the client keeps
	// reading, however slowly, is not given up on.
	progress func() bool
	// baseFor is the start (since) of the write progress was last asked about at
	// half the timeout, so that its answer at the timeout covers that half only.
	// Used by scan alone.
	baseFor int64
}

// write sends one message. It returns errStalled once the write watch has given up on
// the client: the caller closes the connection with 1013 if the write went through
// after all, and the watch has dropped it if not.
func (w *wsWriter) write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	w.since.Store(time.Now().UnixNano())
	err := w.conn.Write(ctx, typ, p)
	w.since.Store(0)
	if w.stalled.Load() {
		return errStalled
	}
	return err
}

// writeWatch gives up on WebSocket clients whose frame has been waiting to be written
// for longer than the timeout: clients that read nothing while their kernel buffers are
// full. Such a client is closed with 1013 (try again later) as soon as its frame goes
// through; if it still reads nothing for dropAfter more, the connection is dropped, as
// no close frame can get through a full buffer. Either way the client may resume by
// offset and is told of any gap.
//
// A write only records when it began. A context with a timeout per frame would arm a
// runtime timer for every frame, which wakes the poller's thread on the other CPU and
// cost about 15 µs of every keystroke echo.
//
// One goroutine, started by the server, sleeps while no client is attached and looks at
// every write in flight once per tick while clients are.
type writeWatch struct {
	timeout, dropAfter, tick time.Duration
	wake                     chan struct{} // a first client arrived

	mu      sync.Mutex
	writers map[*wsWriter]struct{}
}

func newWriteWatch(timeout time.Duration) *writeWatch {
	return &writeWatch{
		timeout:   timeout,
		dropAfter: max(timeout, 10*time.Second),
		tick:      max(timeout/10, time.Millisecond),
		wake:      make(chan struct{}, 1),
		writers:   make(map[*wsWriter]struct{}),
	}
}

// add watches the writes of a new client's connection; progress is connProgress's
// for it, or nil.
func (w *writeWatch) add(conn *websocket.Conn, progress func() bool) *wsWriter {
	ww := &wsWriter{conn: conn, progress: progress}
	w.mu.Lock()
	w.writers[ww] = struct{}{}
	first := len(w.writers) == 1
	w.mu.Unlock()
	if first {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return ww
}

func (w *writeWatch) remove(ww *wsWriter) {
	w.mu.Lock()
	delete(w.writers, ww)
	w.mu.Unlock()
}

// run is the watch's goroutine; it returns when ctx ends.
func (w *writeWatch) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		t := time.NewTicker(w.tick)
		for w.scan() {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		t.Stop()
	}
}

// scan marks the clients stuck in a write for longer than the timeout, drops those
// stuck for dropAfter more, and reports whether any client is attached. A client
// whose write is past the timeout but who took bytes since it was last looked at is
// reading, slowly: its write counts as begun now.
func (w *writeWatch) scan() bool {
	now := time.Now()
	stall, drop := now.Add(-w.timeout).UnixNano(), now.Add(-w.timeout-w.dropAfter).UnixNano()
	half := now.Add(-w.timeout / 2).UnixNano()
	var dead []*wsWriter
	w.mu.Lock()
	n := len(w.writers)
	for ww := range w.writers {
		since := ww.since.Load()
		if since != 0 && ww.progress != nil && !ww.stalled.Load() {
			switch {
			case since < stall && ww.progress():
				if ww.since.CompareAndSwap(since, now.UnixNano()) {
					ww.baseFor = now.UnixNano() // just asked
				}
				continue
			case since < half && ww.baseFor != since:
				ww.progress() // bytes taken in the write's first half do not count
				ww.baseFor = since
			}
		}
		switch {
		case since == 0 || since >= stall:
		case since < drop:
			dead = append(dead, ww)
		default:
			ww.stalled.Store(true)
		}
	}
	w.mu.Unlock()
	for _, ww := range dead {
		ww.stalled.Store(true)
		ww.conn.CloseNow()
	}
	return n > 0
}
