package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/coder/websocket"
)

// current waits for a connection to write to.
func (a *Attachment) current(ctx context.Context) (*websocket.Conn, error) {
	for {
		a.mu.Lock()
		conn, up, closed := a.conn, a.up, a.closed
		a.mu.Unlock()
		if closed {
			return nil, ErrAttachmentClosed
		}
		if conn != nil {
			return conn, nil
		}
		select {
		case <-up:
		case <-a.done:
			if errors.Is(a.err, io.EOF) {
				return nil, fmt.Errorf("sdk: failed to send: stream ended: %w", a.err)
			}
			return nil, a.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// send writes one message. A write that fails because the connection dropped is
// retried once on the next connection.
func (a *Attachment) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	conn, err := a.current(ctx)
	if err != nil {
		return err
	}
	werr := conn.Write(ctx, typ, b)
	if werr == nil {
		return nil
	}
	if ctx.Err() == nil {
		a.mu.Lock()
		if a.conn == conn { // the reader has not seen the drop yet; it will
			a.conn = nil
			a.up = make(chan struct{})
		}
		a.mu.Unlock()
		if next, err := a.current(ctx); err == nil && next != conn {
			if werr = next.Write(ctx, typ, b); werr == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("sdk: failed to send: %w", werr)
}

// Write sends p as input bytes (a binary frame).
func (a *Attachment) Write(ctx context.Context, p []byte) error {
	return a.send(ctx, websocket.MessageBinary, p)
}

// Resize asks the server to resize the PTY.
func (a *Attachment) Resize(ctx context.Context, size PTYSize) error {
	b, _ := json.Marshal(controlMsg{Type: "resize", Cols: size.Cols, Rows: size.Rows})
	return a.send(ctx, websocket.MessageText, b)
}

// Signal sends a signal, by name ("SIGINT") or number, to the process.
func (a *Attachment) Signal(ctx context.Context, signal string) error {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Signal string `json:"signal"`
	}{"signal", signal})
	return a.send(ctx, websocket.MessageText, b)
}
