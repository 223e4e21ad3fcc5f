package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/actor"
)

const (
	defaultEventLimit = 1000
	maxEventLimit     = 10000
	defaultTakeMax    = 100
	maxTakeMax        = 1000
)

func queryInt(r *http.Request, name string, def, max int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < 1 {
		return 0, badRequest("%s must be a positive integer, not %q", name, raw)
	}
	return min(v, max), nil
}

func querySeq(r *http.Request) (uint64, error) {
	raw, name := resumeRaw(r, "since")
	if raw == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, badRequest("%s must be a non-negative integer, not %q", name, raw)
	}
	return v, nil
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	since, err := querySeq(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", defaultEventLimit, maxEventLimit)
	if err != nil {
		return err
	}
	events, err := s.node.Events(r.Context(), r.PathValue("sb"), since, limit)
	if err != nil {
		return err
	}
	out := make([]eventJSON, 0, len(events))
	for _, e := range events {
		out = append(out, renderEvent(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out})
	return nil
}

func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	since, err := querySeq(r)
	if err != nil {
		return err
	}
	sb := r.PathValue("sb")
	sub, err := s.node.SubscribeEvents(r.Context(), sb, since)
	if err != nil {
		return err
	}
	defer sub.Close()
	ctx, cancel := s.requestContext(r)
	defer cancel()
	s.metrics.sseClients.Inc()
	defer s.metrics.sseClients.Dec()
	sse := newSSEWriter(w, s.cfg.WSWriteTimeout)

	pumpSSE(ctx, sse, sub.Next, func(ev actor.Event) error {
		b, _ := json.Marshal(renderEvent(ev))
		return sse.Event("", strconv.FormatUint(ev.Seq, 10), b)
	})
	return nil
}

type postEventRequest struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// objectOrEmpty checks that raw is a JSON object (or absent/null, meaning {}).
func objectOrEmpty(field string, raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' {
		return nil, badRequest("%s must be a JSON object", field)
	}
	return t, nil
}

func (s *Server) postEvent(w http.ResponseWriter, r *http.Request) error {
	var req postEventRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Type, "agent.") || len(req.Type) == len("agent.") {
		return badRequest("event type must start with \"agent.\", not %q", req.Type)
	}
	data, err := objectOrEmpty("data", req.Data)
	if err != nil {
		return err
	}
	seq, err := s.node.PostEvent(r.Context(), r.PathValue("sb"), req.Type, data)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]uint64{"seq": seq})
	return nil
}

type postMessageRequest struct {
	Data json.RawMessage `json:"data"`
}

type messageJSON struct {
	ID   string          `json:"id"`
	At   time.Time       `json:"created_at"`
	Data json.RawMessage `json:"data"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	var req postMessageRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	data, err := objectOrEmpty("data", req.Data)
	if err != nil {
		return err
	}
	id, err := s.node.PostMessage(r.Context(), r.PathValue("sb"), data)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
	return nil
}

func (s *Server) takeMessages(w http.ResponseWriter, r *http.Request) error {
	wait, err := queryMs(r, "wait_ms", maxWait)
	if err != nil {
		return err
	}
	max, err := queryInt(r, "max", defaultTakeMax, maxTakeMax)
	if err != nil {
		return err
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	msgs, err := s.node.TakeMessages(ctx, r.PathValue("sb"), wait, max)
	if err != nil && !(ctx.Err() != nil && r.Context().Err() == nil) {
		return err
	}
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageJSON{ID: m.ID, At: m.At.UTC(), Data: m.Data})
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
	return nil
}
