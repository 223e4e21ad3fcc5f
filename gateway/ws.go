package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// defaultWSWriteTimeout is how long one frame may take to reach a client
// (Config.WSWriteTimeout). A client that reads nothing for this long is closed with 1013
// (or dropped, if it keeps reading nothing; see writeWatch) and can resume by offset. A
// client that is merely slow holds its process back (subscribeLive); one that reads
// nothing for Config.StreamHoldBound is skipped first, and sent a gap if it reads again.
const defaultWSWriteTimeout = 10 * time.Second

// wsControl is a JSON control message in either direction.
type wsControl struct {
	Type     string          `json:"type"`
	Cols     uint16          `json:"cols,omitempty"`
	Rows     uint16          `json:"rows,omitempty"`
	Signal   json.RawMessage `json:"signal,omitempty"`
	Offset   *int64          `json:"offset,omitempty"`
	From     *int64          `json:"from,omitempty"`
	To       *int64          `json:"to,omitempty"`
	ExitCode *int            `json:"exit_code,omitempty"`
	// Input is the ready message's ?input= mode, when it is not the default.
	Input inputMode `json:"input,omitempty"`
	// Code and Message are an error message's: what the server could not use.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

func wsOffset(r *http.Request) (int64, bool, error) {
	raw := r.URL.Query().Get("offset")
	if raw == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return 0, false, badRequest("offset must be a non-negative integer, not %q", raw)
	}
	return v, true, nil
}

func (s *Server) processWS(w http.ResponseWriter, r *http.Request) error {
	from, given, err := wsOffset(r)
	if err != nil {
		return err
	}
	mode, err := wsInputMode(r)
	if err != nil {
		return err
	}
	p, err := s.node.Process(r.Context(), r.PathValue("sb"), r.PathValue("p"))
	if info, ok := actor.ExitedProcess(err); ok {
		return s.exitedWS(w, r, info, from, given)
	}
	if err != nil {
		return err
	}
	return s.attachWS(w, r, p, from, given, mode)
}

func (s *Server) terminalWS(w http.ResponseWriter, r *http.Request) error {
	from, given, err := wsOffset(r)
	if err != nil {
		return err
	}
	mode, err := wsInputMode(r)
	if err != nil {
		return err
	}
	_, p, err := s.node.GetTerminal(r.Context(), r.PathValue("sb"), r.PathValue("t"))
	if err != nil {
		return err // an attach never creates a terminal: 404 before the upgrade
	}
	return s.attachWS(w, r, p, from, given, mode)
}

// attachWS bridges a WebSocket to a process: output bytes as binary frames, input and
// JSON control in the client's frames as its mode says (see inputMode). Output is
// pulled from the process's ring at the client's own pace: a client that keeps reading
// is never skipped (the process waits for it while it is a ring behind), and one that
// stops holds the process and the other clients back for Config.StreamHoldBound at
// most (see subscribeLive).
//
// The handler returns once the connection is upgraded: net/http's goroutine for it,
// whose stack grew deep during the upgrade, ends there. One fresh goroutine reads the
// client for as long as it is connected; output is sent by a goroutine that runs only
// while there is output to send (see wsAttachment), so an idle client costs one
// goroutine. The server owns both and Shutdown stops and waits for them.
func (s *Server) attachWS(w http.ResponseWriter, r *http.Request, p *runtime.Process, from int64, given bool, mode inputMode) error {
	if err := checkHandshake(w, r, s.originRule()); err != nil {
		return err
	}
	release, err := s.node.Attach(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	conn, cc, ok := s.acceptWS(w, r)
	if !ok {
		release()
		return nil
	}
	conn.SetReadLimit(1 << 20)
	sub := s.subscribeLive(r, p, startOffset(p, from, given))
	start := sub.Offset() // an offset past the end starts at the end: ready says so

	if !s.trackStream(1) {
		conn.Close(websocket.StatusServiceRestart, "server shutting down")
		sub.Close()
		release()
		return nil
	}

	ended := s.metrics.wsStarted(r.Pattern)
	ctx, cancel := context.WithCancel(s.streamCtx)
	sb, began := r.PathValue("sb"), time.Now()
	a := &wsAttachment{s: s, ctx: ctx, cancel: cancel, ww: s.wsWatch.add(conn, connProgress(cc.conn)), sock: cc.conn, sub: sub,
		start: start, sandbox: sb, process: p.ID(), mode: mode}
	a.idle.L = &a.mu
	// The node that stops owning the sandbox closes with 1012: the client reconnects,
	// through any node, and resumes by offset.
	unwatch := s.watchStream(sb, func() { a.finish(websocket.StatusServiceRestart, "the sandbox moved to another node") })
	// Ending ctx ends the reader, waiting for input (waitReadable) or reading a frame,
	// through a read deadline; an idle client's connection stays open, so a
	// shutting-down server can still say why it closes.
	stopDeadline := context.AfterFunc(ctx, func() { _ = cc.conn.SetReadDeadline(time.Unix(1, 0)) })
	go func() {
		defer s.bg.Done()
		readErr := s.readWS(a, cc, conn, p, mode)
		cancel()
		stopDeadline()
		a.stop() // the pump is done: its subscription's offset is the client's
		s.log.Info("websocket detached", "sandbox", sb, "process", p.ID(), "offset", sub.Offset(),
			"for", time.Since(began).Round(time.Millisecond), "why", readErr)
		code, reason := a.closing()
		switch {
		case s.streamCtx.Err() != nil:
			conn.Close(websocket.StatusServiceRestart, "server shutting down")
		case errors.Is(readErr, errInputBlocked):
			conn.Close(websocket.StatusTryAgainLater, "process is not reading its input")
		case code != 0: // the sender finished: the exit was sent, or the client stalled
			_ = cc.conn.SetReadDeadline(time.Time{}) // the close handshake reads the reply
			conn.Close(code, reason)
		}
		unwatch()
		s.wsWatch.remove(a.ww)
		sub.Close()
		conn.CloseNow()
		release()
		ended()
	}()
	a.mu.Lock()
	a.startPumpLocked()
	a.mu.Unlock()
	return nil
}

// acceptWS upgrades a request that checkHandshake let through, on a connection with
// small buffers. It returns the connection the reader waits on (not the writer, which
// holds net/http's response); ok is false when Accept refused and answered the client.
func (s *Server) acceptWS(w http.ResponseWriter, r *http.Request) (conn *websocket.Conn, cc *clientConn, ok bool) {
	hj := &smallBufferWriter{ResponseWriter: w}
	conn, err := websocket.Accept(hj, r, &websocket.AcceptOptions{
		// checkHandshake judged the Origin already; Accept's own check would trust the
		// Host header, which a DNS-rebinding page controls.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, nil, false
	}
	return conn, hj.hijacked, true
}

func (s *Server) writeWSEvent(ctx context.Context, ww *wsWriter, ev runtime.Event) error {
	switch ev.Kind {
	case runtime.EventOutput:
		if err := ww.write(ctx, websocket.MessageBinary, ev.Data); err != nil {
			return err
		}
		s.metrics.streamed.WithLabelValues(streamWebSocket).Add(float64(len(ev.Data)))
		return nil
	case runtime.EventGap:
		return writeControl(ctx, ww, wsControl{Type: "gap", From: &ev.From, To: &ev.To})
	case runtime.EventExit:
		code, sig := exitFields(ev.Exit)
		b, _ := json.Marshal(map[string]any{"type": "exit", "exit_code": code, "signal": sig})
		return ww.write(ctx, websocket.MessageText, b)
	}
	return nil
}

func writeControl(ctx context.Context, ww *wsWriter, c wsControl) error {
	b, _ := json.Marshal(c)
	return ww.write(ctx, websocket.MessageText, b)
}
