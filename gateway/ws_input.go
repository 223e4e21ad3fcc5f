package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runtime"
)

// What a WebSocket client's frames mean is chosen with ?input= when it connects, so
// that a frame is never guessed at:
//
//   - binary (the default): binary frames are input bytes, text frames JSON controls.
//   - text: text frames are input (their UTF-8 bytes, as they are), and the controls
//     move to binary frames, each holding one JSON control message.
//   - line: as text, with Enter after each text frame: what a line-oriented client
//     such as wscat, which sends each typed line as a text frame without its newline,
//     needs to run commands. Enter is "\r" on a PTY (the terminal's Enter key; the
//     line discipline makes it "\n" for programs that read lines) and "\n" on a pipe.
//
// A control frame the server cannot use (not JSON, an unknown type, a bad size or
// signal, a resize of a process without a PTY) is answered with
// {"type":"error","code":…,"message":…} naming the rule; the connection stays open, as
// a terminal must survive a client's mistake.

// inputMode is what a client's frames mean (?input=).
type inputMode string

const (
	inputBinary inputMode = "binary"
	inputText   inputMode = "text"
	inputLine   inputMode = "line"
)

// maxNotices bounds the error messages waiting to be sent to one client; a client
// that sends bad controls faster than it reads the answers misses the excess.
const maxNotices = 16

// wsInputMode returns the ?input= of a WebSocket request, or the 400 for a bad one.
func wsInputMode(r *http.Request) (inputMode, error) {
	switch m := inputMode(r.URL.Query().Get("input")); m {
	case "", inputBinary:
		return inputBinary, nil
	case inputText, inputLine:
		return m, nil
	default:
		return "", badRequest("input must be binary, text or line, not %q", m)
	}
}

// isInput reports whether a frame of type typ is input in mode m (else a control).
func (m inputMode) isInput(typ websocket.MessageType) bool {
	if m == inputBinary {
		return typ == websocket.MessageBinary
	}
	return typ == websocket.MessageText
}

// errInputBlocked ends a WebSocket client whose input the process did not take within
// Config.InputTimeout: it is closed with 1013.
var errInputBlocked = errors.New("process is not reading its input")

// readWS applies what the client sends until it disconnects, and returns why it
// stopped: input frames go to the process, control frames resize or signal it, and a
// control it cannot apply is answered with an error message (see inputMode). Input the
// process does not take within Config.InputTimeout ends the client (errInputBlocked).
func (s *Server) readWS(a *wsAttachment, cc *clientConn, conn *websocket.Conn, p *runtime.Process, mode inputMode) error {
	enter := []byte("\n")
	if p.Info().PTY {
		enter = []byte("\r")
	}
	for {
		if err := cc.waitReadable(); err != nil {
			return err
		}
		// No context: a cancellable one would cost every frame a registration with
		// it, and the read deadline set when the attachment ends stops this read.
		typ, data, err := conn.Read(context.Background())
		if err != nil {
			return err
		}
		if mode.isInput(typ) {
			if mode == inputLine {
				data = append(data, enter...)
			}
			// A keystroke the process takes at once costs no timer; a shutdown ends
			// a wait.
			_, err := p.WriteContext(s.streamCtx, data, s.inputTimeout())
			if errors.Is(err, runtime.ErrInputBlocked) {
				return errInputBlocked // the caller closes the connection
			}
			continue
		}
		if err := applyControl(p, data, mode); err != nil {
			e := toAPIError(err)
			a.notify(wsControl{Type: "error", Code: e.Code, Message: e.Message})
		}
	}
}

// applyControl applies one JSON control message to p, or says why it cannot.
func applyControl(p *runtime.Process, data []byte, mode inputMode) error {
	var c wsControl
	if err := json.Unmarshal(data, &c); err != nil || c.Type == "" {
		return badRequest("%s", controlRule(mode))
	}
	switch c.Type {
	case "resize":
		if !validTermSize(c.Cols, c.Rows) {
			return badRequest("resize needs cols and rows from 1 to %d, not %dx%d", maxTermSize, c.Cols, c.Rows)
		}
		return p.Resize(c.Cols, c.Rows)
	case "signal":
		name, err := parseSignalValue(c.Signal)
		if err != nil {
			return err
		}
		sig, err := runtime.ParseSignal(name)
		if err != nil {
			return badRequest("unknown signal %q", name) // as POST …/signal says it
		}
		return p.Signal(sig)
	default:
		return badRequest("unknown control type %q: want resize or signal", c.Type)
	}
}

// controlRule explains, for a frame that is not a control message, what the frames of
// the connection's mode mean.
func controlRule(mode inputMode) string {
	const controls = `{"type":"resize","cols":C,"rows":R} or {"type":"signal","signal":"SIGINT"}`
	if mode == inputBinary {
		return "a text frame is a JSON control message, " + controls +
			"; input goes in binary frames, or connect with ?input=line (each text frame is a line of input) or ?input=text (text frames are input as they are)"
	}
	return fmt.Sprintf("with ?input=%s text frames are input and a binary frame is a JSON control message, %s", mode, controls)
}

// notify queues a control message (an error) for the client, sent by the attachment's
// sender after the ready message and in order with the output. Up to maxNotices wait;
// more are dropped. It is called by the reader goroutine.
func (a *wsAttachment) notify(c wsControl) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.notices) >= maxNotices {
		return
	}
	a.notices = append(a.notices, c)
	a.startPumpLocked()
}

// takeNotice returns the oldest queued control message, if any.
func (a *wsAttachment) takeNotice() (wsControl, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.notices) == 0 {
		return wsControl{}, false
	}
	c := a.notices[0]
	a.notices = a.notices[1:]
	return c, true
}

// noticePending reports whether a control message waits to be sent.
func (a *wsAttachment) noticePending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.notices) > 0
}
