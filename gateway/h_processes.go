package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// maxWait bounds wait_ms on long-polling routes.
const maxWait = 5 * time.Minute

// ptyRequest is the pty field of a process create: a size ({"cols", "rows"}, zero
// meaning 80x24), or true for 80x24; false and null mean pipes.
type ptyRequest struct {
	Cols, Rows uint16
	On         bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *ptyRequest) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*p = ptyRequest{On: true}
		return nil
	case "false", "null":
		*p = ptyRequest{}
		return nil
	}
	var size struct {
		Cols uint16 `json:"cols"`
		Rows uint16 `json:"rows"`
	}
	if err := decodeStrict(b, &size); err != nil {
		return fmt.Errorf("pty: %w", err)
	}
	*p = ptyRequest{Cols: size.Cols, Rows: size.Rows, On: true}
	return nil
}

type createProcessRequest struct {
	commandFields
	PTY     ptyRequest `json:"pty"`
	Tag     string     `json:"tag"`
	Label   string     `json:"label"`
	Session string     `json:"session"`
	KeepMs  *int64     `json:"keep_ms"`
}

func (s *Server) createProcess(w http.ResponseWriter, r *http.Request) error {
	var req createProcessRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	command, timeout, err := req.check()
	if err != nil {
		return err
	}
	keep, err := durationMs("keep_ms", req.KeepMs)
	if err != nil {
		return err
	}
	if req.Session != "" && !runtime.ValidID(req.Session) {
		return badRequest("invalid session id %q", req.Session)
	}
	if err := noNULs("tag", req.Tag, "label", req.Label); err != nil {
		return err
	}
	if err := checkCommandSize(req.shell(), req.Argv, req.Tag, req.Label); err != nil {
		return err
	}
	if err := s.checkRoute(r, "POST "+sbPath+"/processes", nil, command); err != nil {
		return err
	}
	opts := runtime.StartOptions{
		Command: req.shell(), Argv: req.Argv, Cwd: req.Cwd, Env: req.Env, Tag: req.Tag, Label: req.Label,
		Session: req.Session, Timeout: timeout, Keep: keep,
	}
	if req.PTY.On {
		size, err := winSize(req.PTY.Cols, req.PTY.Rows, true)
		if err != nil {
			return err
		}
		opts.PTY = &size
	}
	info, err := s.node.StartProcess(r.Context(), r.PathValue("sb"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, renderProcess(info))
	return nil
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && status != string(runtime.StatusRunning) && status != string(runtime.StatusExited) {
		return badRequest("status must be running or exited, not %q", status)
	}
	tag, session := q.Get("tag"), q.Get("session")
	if session != "" && !runtime.ValidID(session) {
		return badRequest("invalid session id %q: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", session)
	}
	list, err := s.node.ListProcesses(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	l := newJSONList(w, "processes") // encoded item by item (list_stream.go)
	for _, p := range list {
		if (status == "" || string(p.Status) == status) && (tag == "" || p.Tag == tag) && (session == "" || p.Session == session) {
			if err := l.add(renderProcess(p)); err != nil {
				return s.listFailed(r, l, err)
			}
		}
	}
	l.end()
	return nil
}

// queryMs parses an optional millisecond query parameter, clamped to max.
func queryMs(r *http.Request, name string, max time.Duration) (time.Duration, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return 0, badRequest("%s must be a non-negative integer, not %q", name, raw)
	}
	if v > int64(max/time.Millisecond) {
		return max, nil // before multiplying: a huge v would wrap around to a short wait
	}
	return time.Duration(v) * time.Millisecond, nil
}

func (s *Server) getProcess(w http.ResponseWriter, r *http.Request) error {
	wait, err := queryMs(r, "wait_ms", maxWait)
	if err != nil {
		return err
	}
	sb, id := r.PathValue("sb"), r.PathValue("p")
	if wait > 0 {
		p, err := s.node.Process(r.Context(), sb, id)
		if info, ok := actor.ExitedProcess(err); ok {
			writeJSON(w, http.StatusOK, renderProcess(info)) // exited: nothing to wait for
			return nil
		}
		if err != nil {
			return err
		}
		ctx, cancel := s.requestContext(r)
		ctx, cancelWait := context.WithTimeout(ctx, wait)
		_, _ = p.Wait(ctx)
		cancelWait()
		cancel()
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
	}
	// Read in a turn: an exit it shows is in the event log before this answer.
	info, err := s.node.ProcessInfo(r.Context(), sb, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderProcess(info))
	return nil
}

func (s *Server) deleteProcess(w http.ResponseWriter, r *http.Request) error {
	if err := s.node.DeleteProcess(r.Context(), r.PathValue("sb"), r.PathValue("p")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type signalRequest struct {
	Signal json.RawMessage `json:"signal"`
}

// parseSignalValue accepts a signal as a JSON string ("SIGINT", "INT", "2") or number.
func parseSignalValue(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", badRequest("signal is required")
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return name, nil
	}
	var num int
	if err := json.Unmarshal(raw, &num); err == nil {
		return strconv.Itoa(num), nil
	}
	return "", badRequest("signal must be a name like \"SIGINT\" or a number")
}

func (s *Server) signalProcess(w http.ResponseWriter, r *http.Request) error {
	var req signalRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	name, err := parseSignalValue(req.Signal)
	if err != nil {
		return err
	}
	sig, err := runtime.ParseSignal(name)
	if err != nil {
		return badRequest("unknown signal %q", name)
	}
	p, err := s.node.Process(r.Context(), r.PathValue("sb"), r.PathValue("p"))
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type inputRequest struct {
	Data *string `json:"data"`
	Text *string `json:"text"`
	EOF  bool    `json:"eof"`
}

func (s *Server) inputProcess(w http.ResponseWriter, r *http.Request) error {
	var req inputRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	var data []byte
	switch {
	case req.Data != nil && req.Text != nil:
		return badRequest("give either data or text, not both")
	case req.Data != nil:
		b, err := base64.StdEncoding.DecodeString(*req.Data)
		if err != nil {
			return badRequest("data must be standard base64: %v", err)
		}
		data = b
	case req.Text != nil:
		data = []byte(*req.Text)
	case !req.EOF:
		return badRequest("give data, text or eof")
	}
	p, err := s.node.Process(r.Context(), r.PathValue("sb"), r.PathValue("p"))
	if err != nil {
		return err
	}
	if len(data) > 0 {
		ctx, cancel := s.requestContext(r) // a shutdown ends the wait
		n, err := p.WriteContext(ctx, data, s.inputTimeout())
		cancel()
		if errors.Is(err, runtime.ErrInputBlocked) {
			return inputBlocked(n, len(data))
		}
		if err != nil {
			return err
		}
	}
	if req.EOF {
		err := p.CloseStdin()
		if errors.Is(err, runtime.ErrInputBlocked) {
			return inputBlocked(0, 1)
		}
		if err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// inputTimeout is Config.InputTimeout or its default.
func (s *Server) inputTimeout() time.Duration {
	if s.cfg.InputTimeout > 0 {
		return s.cfg.InputTimeout
	}
	return runtime.DefaultInputTimeout
}

// inputBlocked is the answer to input the process did not take in time: 503, to be
// retried (it may be reading again by then), saying how much of it went through.
func inputBlocked(written, total int) *apiError {
	e := errorf(http.StatusServiceUnavailable, codeUnavailable,
		"process is not reading its input: %d of %d bytes written", written, total)
	e.RetryAfter = time.Second
	return e
}

type resizeRequest struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

func decodeResize(r *http.Request) (runtime.WinSize, error) {
	var req resizeRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return runtime.WinSize{}, err
	}
	return winSize(req.Cols, req.Rows, false)
}

func (s *Server) resizeProcess(w http.ResponseWriter, r *http.Request) error {
	size, err := decodeResize(r)
	if err != nil {
		return err
	}
	p, err := s.node.Process(r.Context(), r.PathValue("sb"), r.PathValue("p"))
	if err != nil {
		return err
	}
	if err := p.Resize(size.Cols, size.Rows); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) processOutput(w http.ResponseWriter, r *http.Request) error {
	from, given, err := resumePoint(r, "offset")
	if err != nil {
		return err
	}
	encoding, err := outputEncoding(r)
	if err != nil {
		return err
	}
	sb := r.PathValue("sb")
	p, err := s.node.Process(r.Context(), sb, r.PathValue("p"))
	if info, ok := actor.ExitedProcess(err); ok {
		defer s.metrics.sseStarted(r.Pattern)()
		return exitedOutputSSE(w, info, from, given, encoding)
	}
	if err != nil {
		return err
	}
	release, err := s.node.Attach(r.Context(), sb)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := s.streamContext(r, sb) // ends when the sandbox moves away
	defer cancel()
	sub := s.subscribeLive(r, p, startOffset(p, from, given))
	defer sub.Close()

	defer s.metrics.sseStarted(r.Pattern)()
	sse := newSSEWriter(w, s.cfg.WSWriteTimeout)
	if c := clientConnOf(r); c != nil {
		sse.readingSlowly(connProgress(c))
	}
	return s.pumpOutputSSE(ctx, newOutputSSE(sse, encoding), sub, sb, p.ID())
}

// subscribeLive subscribes a live stream (WebSocket or SSE) to p's output from offset
// from for the client of r: a reader the process waits for while it keeps reading, so
// it is never sent a gap, and for at most Config.StreamHoldBound when it stops
// (liveOptions).
func (s *Server) subscribeLive(r *http.Request, p *runtime.Process, from int64) *runtime.Subscription {
	return p.SubscribeWith(from, s.liveOptions(r))
}

// startOffset is where a stream starts: the requested offset, or without one the oldest
// byte still in the ring (so a fresh client gets no gap for what it never asked for).
func startOffset(p *runtime.Process, from int64, given bool) int64 {
	if given {
		return from
	}
	return p.Info().OutputDropped
}

// pumpOutputSSE sends the output of process id of sandbox sb from sub, until the exit.
func (s *Server) pumpOutputSSE(ctx context.Context, out *outputSSE, sub *runtime.Subscription, sb, id string) error {
	pumpSSE(ctx, out.sse, sub.Next, func(ev runtime.Event) error {
		switch ev.Kind {
		case runtime.EventOutput:
			s.metrics.streamed.WithLabelValues(streamSSE).Add(float64(len(ev.Data)))
		case runtime.EventExit:
			s.settleExit(ctx, sb, id)
		}
		return out.write(ev)
	})
	return nil // the exit was sent, or the client or server went away
}
