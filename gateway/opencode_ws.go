package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// ptyCursor parses the connect's cursor: -1 (the current end), N ≥ 0, or absent.
func ptyCursor(r *http.Request) (cursor int64, given bool, err error) {
	raw := r.URL.Query().Get("cursor")
	if raw == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < -1 {
		return 0, false, badRequest("cursor must be -1 or a non-negative integer, not %q", raw)
	}
	return v, true, nil
}

// opencodeConnect is OpenCode's connect WebSocket (ptyStream has the framing). Every
// frame from the client, text or binary, is input. An unknown pty, or a process
// without a PTY, closes with 1008 after the upgrade, as OpenCode's server does; a
// pty that exited in an earlier life of the sandbox's runtime has no output left and
// closes normally at once. The stream is lossless while the client reads (a holding
// subscription, as on the other WebSockets), ends with a normal close once the
// process has exited and everything was sent, and closes with 1012 when this node
// stops owning the sandbox (or shuts down): the client reconnects with its cursor.
func (s *Server) opencodeConnect(w http.ResponseWriter, r *http.Request) error {
	cursor, given, err := ptyCursor(r)
	if err != nil {
		return ocErr(r, err)
	}
	if err := checkHandshake(w, r, s.originRule()); err != nil {
		return err
	}
	sb, id := r.PathValue("sb"), r.PathValue("ptyID")
	p, err := s.node.Process(r.Context(), sb, id)
	_, exited := actor.ExitedProcess(err)
	switch {
	case exited:
		return s.closeAtOnce(w, r, websocket.StatusNormalClosure, "the pty exited and its output is no longer kept")
	case err != nil && isPtyNotFound(err):
		return s.closeAtOnce(w, r, websocket.StatusPolicyViolation, "pty not found")
	case err != nil:
		return ocErr(r, err)
	case !p.Info().PTY:
		return s.closeAtOnce(w, r, websocket.StatusPolicyViolation, "pty not found")
	}
	release, err := s.node.Attach(r.Context(), sb)
	if err != nil {
		return ocErr(r, err)
	}
	start, gap, err := ptyStart(p, cursor, given)
	var end runtime.TextPos
	if err == nil {
		end, err = p.TextEnd() // the replay ends there
	}
	if err != nil {
		release()
		return ocErr(r, err)
	}
	conn, _, ok := s.acceptWS(w, r) // small buffers; the Origin was judged above
	if !ok {
		release()
		return nil // Accept answered the client
	}
	conn.SetReadLimit(1 << 20)
	sub, err := p.SubscribeText(start, s.liveOptions(r))
	if err != nil { // a PTY was checked above
		conn.Close(websocket.StatusInternalError, "no text")
		release()
		return nil
	}
	ps := &ptyStream{s: s, conn: conn, sub: sub, units: start.Units, replay: end.Offset}
	if !s.trackStream(2) {
		conn.Close(websocket.StatusServiceRestart, "server shutting down")
		sub.Close()
		release()
		return nil
	}

	ended := s.metrics.wsStarted(r.Pattern)
	// ctx ends the stream; the reader's own context outlives it, because coder/websocket
	// closes a connection whose Read is cancelled, and the close frame says why.
	ctx, cancel := context.WithCancel(s.streamCtx)
	readCtx, stopRead := context.WithCancel(context.Background())
	var cl ptyCloser
	finish := func(code websocket.StatusCode, reason string) { cl.set(code, reason); cancel() }
	unwatch := s.watchStream(sb, func() { finish(websocket.StatusServiceRestart, "the sandbox moved to another node") })
	go func() { // the client's frames: input
		defer s.bg.Done()
		if err := s.ptyInput(ctx, readCtx, conn, p); errors.Is(err, errInputBlocked) {
			finish(websocket.StatusTryAgainLater, "process is not reading its input")
		}
		cancel() // the client went away: so does the stream
	}()
	go func() {
		defer s.bg.Done()
		if err := ps.run(ctx, gap); err == nil {
			s.settleExit(ctx, sb, id) // the exit is in the event log before the close says so
			cl.set(websocket.StatusNormalClosure, "")
		}
		cancel()
		unwatch()
		code, reason := cl.get()
		switch {
		case code != 0:
			conn.Close(code, reason)
		case s.streamCtx.Err() != nil:
			conn.Close(websocket.StatusServiceRestart, "server shutting down")
		default: // the client went away, or took nothing within the write timeout
			conn.CloseNow()
		}
		stopRead()
		ps.sub.Close()
		release()
		ended()
	}()
	return nil
}

// ptyStart is where a connect starts: the current end for cursor -1, the oldest text
// kept without a cursor, else the text position of the cursor. A cursor older than
// what is kept starts at the oldest text, with the gap the client is told about.
func ptyStart(p *runtime.Process, cursor int64, given bool) (runtime.TextPos, *ptyRange, error) {
	switch {
	case given && cursor < 0:
		pos, err := p.TextEnd()
		return pos, nil, err
	case !given:
		pos, err := p.TextStart()
		return pos, nil, err
	}
	pos, err := p.TextSeek(cursor)
	if errors.Is(err, runtime.ErrTextGone) {
		return pos, &ptyRange{From: cursor, To: pos.Units}, nil
	}
	return pos, nil, err
}

// ptyInput writes every frame the client sends to the process, until the client goes
// away or ctx ends. Input to an exited process is dropped.
func (s *Server) ptyInput(ctx, readCtx context.Context, conn *websocket.Conn, p *runtime.Process) error {
	for {
		_, data, err := conn.Read(readCtx)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			continue
		}
		_, err = p.WriteContext(ctx, data, s.inputTimeout())
		switch {
		case errors.Is(err, runtime.ErrInputBlocked):
			return errInputBlocked
		case errors.Is(err, runtime.ErrExited), errors.Is(err, runtime.ErrStdinClosed):
		case err != nil:
			return err
		}
	}
}

// ptyCloser is the close code and reason a connect stream ends with: the first asked
// for wins. Safe for concurrent use.
type ptyCloser struct {
	mu     sync.Mutex
	code   websocket.StatusCode
	reason string
}

func (c *ptyCloser) set(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.code == 0 {
		c.code, c.reason = code, reason
	}
}

func (c *ptyCloser) get() (websocket.StatusCode, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.reason
}

// closeAtOnce upgrades and closes with code: a WebSocket client learns why only from
// a close frame.
func (s *Server) closeAtOnce(w http.ResponseWriter, r *http.Request, code websocket.StatusCode, reason string) error {
	conn, _, ok := s.acceptWS(w, r)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	go func() { _, _, _ = conn.Read(ctx) }() // the close handshake's answer
	conn.Close(code, reason)
	return nil
}
