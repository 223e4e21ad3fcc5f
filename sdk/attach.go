package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"

	"github.com/coder/websocket"
)

// AttachKind says whether [Client.Attach] attaches to a process or a terminal.
type AttachKind string

// The kinds of attachable objects.
const (
	AttachProcess  AttachKind = "processes"
	AttachTerminal AttachKind = "terminals"
)

// AttachEventType is the kind of an [AttachEvent].
type AttachEventType string

// The events an [Attachment] delivers.
const (
	// AttachReady starts every connection, the first and each reconnect; Offset is
	// the offset the server streams from.
	AttachReady AttachEventType = "ready"
	// AttachOutput carries output bytes in Data, the first at Offset.
	AttachOutput AttachEventType = "output"
	// AttachGap reports the byte range [From, To) that this client will not get.
	AttachGap AttachEventType = "gap"
	// AttachExit is the last event: the process (or terminal shell) exited.
	AttachExit AttachEventType = "exit"
)

// AttachEvent is one event read from an [Attachment].
type AttachEvent struct {
	Type AttachEventType
	// Restarted is set on an AttachReady of a terminal whose shell is not the one of
	// the previous connection (it ended, with a server restart say, and the terminal
	// started a new one): offsets start again with the new shell's output, which is
	// streamed from its beginning.
	Restarted bool
	Data      []byte
	Offset    int64
	From, To  int64
	ExitCode  *int
	Signal    *Signal
}

// maxFrame bounds one WebSocket message from the server.
const maxFrame = 16 << 20

// Attachment is a live WebSocket attachment to a process or a terminal (see
// [Client.Attach]).
//
// Its lifecycle:
//
//  1. Attach dials and returns; a goroutine owned by the Attachment reads frames.
//  2. [Attachment.Next] returns the events in order. When the connection drops, the
//     goroutine redials with ?offset= set to the offset reached (at most
//     [Options.MaxRetries] times in a row without data), and the events go on after a
//     new [AttachReady]. It does not reconnect after [AttachExit] or a normal close.
//     Before each connection to a terminal it reads the terminal (GET) to learn which
//     shell is behind it; when that changed, the new shell is streamed from its start
//     and the ready event has Restarted set.
//  3. After the exit or a normal close, Next returns io.EOF; when reconnecting failed,
//     it returns the last error.
//  4. [Attachment.Close] detaches (the process keeps running) and stops the goroutine.
//
// Next must be called from one goroutine at a time. Write, Resize, Signal, Offset and
// Close are safe concurrently with each other and with Next. A message sent while the
// connection is down waits for the reconnect, and one whose write fails is sent again
// once on the next connection; a message the kernel accepted just before the
// connection dropped may still be lost.
type Attachment struct {
	c    *Client
	path []string
	kind AttachKind
	sb   string
	id   string

	ctx    context.Context // lifetime, canceled by Close
	cancel context.CancelFunc
	events chan AttachEvent
	done   chan struct{} // closed when the reader goroutine ends; err is set then
	err    error

	mu     sync.Mutex
	conn   *websocket.Conn // nil while reconnecting
	up     chan struct{}   // closed when conn is set
	offset int64           // next byte expected; -1 until known
	closed bool
	// shell is the process behind a terminal at the last connection, and restarted
	// says the next ready frame follows a change of it (see checkShell).
	shell     string
	restarted bool

	closeOnce sync.Once
}

// controlMsg is a JSON control frame, in either direction.
type controlMsg struct {
	Type     string  `json:"type"`
	Offset   int64   `json:"offset,omitempty"`
	From     int64   `json:"from,omitempty"`
	To       int64   `json:"to,omitempty"`
	ExitCode *int    `json:"exit_code,omitempty"`
	Signal   *Signal `json:"signal,omitempty"`
	Cols     int     `json:"cols,omitempty"`
	Rows     int     `json:"rows,omitempty"`
}

// Attach opens the WebSocket of a process or terminal id in sandbox sb, streaming
// output from byte offset (negative: the server's default). ctx bounds the first dial
// only; the attachment lives until Close or the end of the stream.
func (c *Client) Attach(ctx context.Context, sb string, kind AttachKind, id string, offset int64) (*Attachment, error) {
	if kind != AttachProcess && kind != AttachTerminal {
		return nil, fmt.Errorf("sdk: bad attach kind %q", kind)
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &Attachment{
		c: c, path: sbPath(sb, string(kind), id, "ws"), kind: kind, sb: sb, id: id,
		ctx: life, cancel: cancel,
		events: make(chan AttachEvent),
		done:   make(chan struct{}),
		up:     make(chan struct{}),
		offset: max(offset, -1),
	}
	if err := a.checkShell(ctx); err != nil {
		cancel()
		return nil, err
	}
	conn, err := a.dial(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	a.setConn(conn)
	go a.run(conn)
	return a, nil
}

// dial opens one connection from the current offset. A connection that cannot be
// made is tried on the next endpoint, each at most once (endpoints.go).
func (a *Attachment) dial(ctx context.Context) (*websocket.Conn, error) {
	q := url.Values{}
	a.mu.Lock()
	if a.offset >= 0 {
		q.Set("offset", strconv.FormatInt(a.offset, 10))
	}
	a.mu.Unlock()
	for attempt := 1; ; attempt++ {
		u, i, err := a.c.endpoint(q, a.path...)
		if err != nil {
			return nil, err
		}
		conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: a.c.hc, HTTPHeader: a.c.header()})
		if err != nil {
			if resp != nil && resp.StatusCode >= 400 {
				return nil, decodeError(resp)
			}
			if ctx.Err() == nil && unreachable(err) {
				a.c.eps.failed(i)
				if attempt < len(a.c.eps.urls) {
					continue
				}
			}
			return nil, fmt.Errorf("sdk: failed to attach to %s: %w", u, err)
		}
		conn.SetReadLimit(maxFrame)
		return conn, nil
	}
}

// run is the reader goroutine: it reads conn, then reconnects until the stream ends.
func (a *Attachment) run(conn *websocket.Conn) {
	failures := 0
	var lastErr error
	for {
		if conn != nil {
			progress, end, err := a.read(conn)
			a.dropConn(conn)
			if progress {
				failures = 0
			}
			if end {
				a.finish(io.EOF)
				return
			}
			lastErr = err
		}
		if a.ctx.Err() != nil {
			a.finish(ErrAttachmentClosed)
			return
		}
		if failures >= a.c.retries {
			a.finish(fmt.Errorf("sdk: attachment lost after %d retries: %w", failures, noEOF(lastErr)))
			return
		}
		failures++
		if sleepCtx(a.ctx, a.c.retryDelay(failures, lastErr)) != nil {
			a.finish(ErrAttachmentClosed)
			return
		}
		err := a.checkShell(a.ctx)
		if err == nil {
			conn, err = a.dial(a.ctx)
		}
		if err != nil {
			if a.ctx.Err() != nil {
				a.finish(ErrAttachmentClosed)
				return
			}
			if !retryable(err) {
				a.finish(err)
				return
			}
			lastErr, conn = err, nil
			continue
		}
		a.setConn(conn)
	}
}

// read delivers the frames of one connection. end is true when the stream is over
// (exit event or normal close); progress is true when any frame was delivered.
func (a *Attachment) read(conn *websocket.Conn) (progress, end bool, err error) {
	pos := int64(-1) // stream offset of the next binary byte on this connection
	for {
		typ, b, err := conn.Read(a.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return progress, true, nil
			}
			return progress, false, err
		}
		var ev AttachEvent
		if typ == websocket.MessageBinary {
			ev = a.output(&pos, b)
			if len(ev.Data) == 0 {
				continue
			}
		} else {
			var m controlMsg
			if err := json.Unmarshal(b, &m); err != nil {
				return progress, false, fmt.Errorf("sdk: bad control frame %.80q: %w", b, err)
			}
			switch AttachEventType(m.Type) {
			case AttachReady:
				pos = m.Offset
				a.mu.Lock()
				if a.offset < pos {
					a.offset = pos
				}
				restarted := a.restarted
				a.restarted = false
				a.mu.Unlock()
				ev = AttachEvent{Type: AttachReady, Offset: m.Offset, Restarted: restarted}
			case AttachGap:
				pos = max(pos, m.To)
				a.mu.Lock()
				a.offset = max(a.offset, m.To)
				a.mu.Unlock()
				ev = AttachEvent{Type: AttachGap, From: m.From, To: m.To}
			case AttachExit:
				ev = AttachEvent{Type: AttachExit, ExitCode: m.ExitCode, Signal: m.Signal}
			default:
				continue // unknown control messages are for newer clients
			}
		}
		select {
		case a.events <- ev:
			// A ready frame alone is no progress, so a server that accepts and drops
			// at once still uses up the retries.
			progress = progress || ev.Type != AttachReady
		case <-a.ctx.Done():
			return progress, false, a.ctx.Err()
		}
		if ev.Type == AttachExit {
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return progress, true, nil
		}
	}
}

// output turns a binary frame at stream position *pos into an event, dropping bytes
// already delivered before a reconnect, and advances the offsets.
func (a *Attachment) output(pos *int64, b []byte) AttachEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	if *pos < 0 { // no ready frame: trust the server to start where asked
		*pos = max(a.offset, 0)
	}
	start := *pos
	*pos += int64(len(b))
	if skip := a.offset - start; skip > 0 {
		if skip >= int64(len(b)) {
			return AttachEvent{Type: AttachOutput}
		}
		b, start = b[skip:], a.offset
	}
	a.offset = *pos
	return AttachEvent{Type: AttachOutput, Data: b, Offset: start}
}

func (a *Attachment) setConn(conn *websocket.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conn = conn
	close(a.up)
}

func (a *Attachment) dropConn(conn *websocket.Conn) {
	a.mu.Lock()
	if a.conn == conn {
		a.conn = nil
		a.up = make(chan struct{})
	}
	a.mu.Unlock()
	_ = conn.CloseNow()
}

// finish records the final error and ends the goroutine.
func (a *Attachment) finish(err error) {
	a.mu.Lock()
	if a.closed {
		err = ErrAttachmentClosed
	}
	a.mu.Unlock()
	a.err = err
	close(a.done)
}

// Next returns the next event. It returns io.EOF after the stream ended normally,
// [ErrAttachmentClosed] after Close, or the error that made reconnecting give up.
// Canceling ctx abandons this call only.
func (a *Attachment) Next(ctx context.Context) (AttachEvent, error) {
	select {
	case ev := <-a.events:
		return ev, nil
	case <-a.done:
		return AttachEvent{}, a.err
	case <-ctx.Done():
		return AttachEvent{}, ctx.Err()
	}
}

// Offset returns the offset of the next output byte expected: where a new attachment
// would resume. It is -1 until the server said where the stream starts.
func (a *Attachment) Offset() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.offset
}

// Close detaches: it closes the connection normally, leaving the process running,
// and waits for the reader goroutine. Calling it again is a no-op.
func (a *Attachment) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		conn := a.conn
		a.mu.Unlock()
		// conn.Close waits for the server's close frame, which the reader goroutine
		// reads; cancel after it so the reader does not hang on a silent server.
		var wg sync.WaitGroup
		if conn != nil {
			wg.Go(func() {
				_ = conn.Close(websocket.StatusNormalClosure, "detach")
				a.cancel()
			})
		} else {
			a.cancel()
		}
		<-a.done
		a.cancel()
		wg.Wait()
	})
	return nil
}
