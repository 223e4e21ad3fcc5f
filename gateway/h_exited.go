package gateway

import (
	"context"
	"net/http"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runtime"
)

// An exited process whose sandbox was passivated, hibernated, expired or restarted
// since is only its saved record (actor.ExitedProcess): listed, and answered by GET,
// until its keep_ms passes. Its output left with the runtime (output_dropped equals
// output_offset), so its streams are what a live exited process's would be once its
// ring emptied: a gap for any asked-for bytes, then the exit.

// exitedStream returns where the stream of the exited process info starts for a
// client that asked for offset from (given), and the events it gets.
func exitedStream(info runtime.ProcessInfo, from int64, given bool) (int64, []runtime.Event) {
	end := info.OutputOffset
	exit := runtime.ExitStatus{Code: -1}
	if info.Exit != nil {
		exit = *info.Exit
	}
	if !given || from >= end || from < 0 {
		return end, []runtime.Event{{Kind: runtime.EventExit, Exit: exit}}
	}
	return from, []runtime.Event{{Kind: runtime.EventGap, From: from, To: end}, {Kind: runtime.EventExit, Exit: exit}}
}

// exitedOutputSSE answers the SSE output stream of an exited process's record.
func exitedOutputSSE(w http.ResponseWriter, info runtime.ProcessInfo, from int64, given bool, encoding string) error {
	out := newOutputSSE(newSSEWriter(w, defaultWSWriteTimeout), encoding) // two small events
	_, events := exitedStream(info, from, given)
	for _, ev := range events {
		if err := out.write(ev); err != nil {
			return nil // the client went away
		}
	}
	return nil
}

// exitedWS answers a WebSocket attach to an exited process's record: ready, a gap if
// bytes were asked for, the exit, then a normal close.
func (s *Server) exitedWS(w http.ResponseWriter, r *http.Request, info runtime.ProcessInfo, from int64, given bool) error {
	if err := checkHandshake(w, r, s.originRule()); err != nil {
		return err
	}
	conn, _, ok := s.acceptWS(w, r)
	if !ok {
		return nil
	}
	defer conn.CloseNow()
	defer s.metrics.wsStarted(r.Pattern)()
	ctx, cancel := context.WithTimeout(r.Context(), defaultWSWriteTimeout)
	defer cancel()
	ww := &wsWriter{conn: conn}
	start, events := exitedStream(info, from, given)
	if err := writeControl(ctx, ww, wsControl{Type: "ready", Offset: &start}); err != nil {
		return nil
	}
	for _, ev := range events {
		if err := s.writeWSEvent(ctx, ww, ev); err != nil {
			return nil
		}
	}
	conn.Close(websocket.StatusNormalClosure, "") // waits a few seconds at most for the peer's close
	return nil
}
