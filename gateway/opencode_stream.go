package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runtime"
)

// maxTextFrame bounds a connect stream's text frame, in bytes.
const maxTextFrame = 64 << 10

// ptyStream sends a PTY process's output to one connect WebSocket in OpenCode's
// framing: output as text frames, positions in UTF-16 code units of that text. It
// reads a TextSubscription, whose events end at unit boundaries with the units the
// runtime's index counted as it buffered the output: valid UTF-8 goes out as it is,
// without being decoded again here, and only output with invalid bytes is decoded (each
// such byte becomes U+FFFD). One goroutine (run) uses it.
//
//  1. If the asked-for cursor is older than what is kept, a control frame says so
//     first: {"cursor": S, "gap": {"from": N, "to": S}}, S being where the text starts.
//  2. The replay: the text from the start position to the end of the output at the
//     time of the connect, in frames of at most maxTextFrame bytes.
//  3. The control frame {"cursor": N}: N is the units of all text before the next
//     frame, which a client that adds each text frame's length keeps up to date.
//  4. Live output, as it comes. A reader that stopped reading for longer than the hold
//     bound and was skipped gets a control frame with the gap and the new cursor,
//     and the text goes on from there.
//  5. At the exit, the last text (bytes of a UTF-8 sequence the process never
//     finished are one U+FFFD each) and a normal close.
type ptyStream struct {
	s       *Server
	conn    *websocket.Conn
	sub     *runtime.TextSubscription
	units   int64 // the cursor after the text sent so far
	replay  int64 // the byte offset where the replay ends: a unit boundary
	replied bool  // the control frame after the replay was sent
	buf     []byte
}

// ptyControl is the JSON of a control frame, after its 0x00 byte.
type ptyControl struct {
	Cursor int64     `json:"cursor"`
	Gap    *ptyRange `json:"gap,omitempty"`
}

type ptyRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// run streams until the exit was sent (it returns nil), or ctx ends or a write fails.
func (ps *ptyStream) run(ctx context.Context, gap *ptyRange) error {
	if gap != nil {
		if err := ps.control(ctx, gap); err != nil {
			return err
		}
	}
	if ps.sub.Pos().Offset >= ps.replay {
		if err := ps.endReplay(ctx); err != nil {
			return err
		}
	}
	for {
		ev, err := ps.sub.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch ev.Kind {
		case runtime.EventOutput:
			text := ev.Data
			if !ev.Clean {
				ps.buf = ev.AppendText(ps.buf[:0])
				text = ps.buf
			}
			if err := ps.text(ctx, text, ev.To.Units-ev.From.Units); err != nil {
				return err
			}
			if !ps.replied && ev.To.Offset >= ps.replay {
				if err := ps.endReplay(ctx); err != nil {
					return err
				}
			}
		case runtime.EventGap:
			// The client stopped reading for longer than the hold bound and was
			// skipped: the text goes on at the oldest kept, and a control frame tells
			// the client the units it will not get and its new cursor.
			gap := &ptyRange{From: ps.units, To: ev.To.Units}
			ps.units = ev.To.Units
			if err := ps.control(ctx, gap); err != nil {
				return err
			}
		case runtime.EventExit:
			if !ps.replied {
				if err := ps.endReplay(ctx); err != nil {
					return err
				}
			}
			return nil
		}
	}
}

// text sends text (n units) in frames of at most maxTextFrame bytes, each ending on a
// character boundary.
func (ps *ptyStream) text(ctx context.Context, text []byte, n int64) error {
	for len(text) > 0 {
		cut := min(len(text), maxTextFrame)
		for cut < len(text) && cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if err := ps.write(ctx, websocket.MessageText, text[:cut]); err != nil {
			return err
		}
		ps.s.metrics.streamed.WithLabelValues(streamWebSocket).Add(float64(cut))
		text = text[cut:]
	}
	ps.units += n
	return nil
}

// endReplay sends the control frame that ends the replay.
func (ps *ptyStream) endReplay(ctx context.Context) error {
	ps.replied = true
	return ps.control(ctx, nil)
}

// control sends a control frame: 0x00 and the cursor (and a gap) as JSON.
func (ps *ptyStream) control(ctx context.Context, gap *ptyRange) error {
	b, _ := json.Marshal(ptyControl{Cursor: ps.units, Gap: gap})
	return ps.write(ctx, websocket.MessageBinary, append([]byte{0}, b...))
}

// write sends one frame within the write timeout: a client that takes nothing for
// that long is dropped (coder/websocket closes the connection when a write's context
// ends) and may reconnect with its cursor.
func (ps *ptyStream) write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, ps.s.cfg.WSWriteTimeout)
	defer cancel()
	return ps.conn.Write(ctx, typ, b)
}
