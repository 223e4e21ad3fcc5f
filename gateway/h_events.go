package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/actor"
)

const (
	defaultEventLimit = 1000
	maxEventLimit     = 10000
)

// queryInt parses an optional integer query parameter in [lo, hi]; absent is def,
// anything else is 400 naming the parameter and its range.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < lo || v > hi {
		return 0, badRequest("%s must be an integer from %d to %d, not %q", name, lo, hi, raw)
	}
	return v, nil
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

// listEvents answers one page of events: at most limit, and at most
// actor.MaxEventPageBytes of event data (at least one event), so a client pages on
// with since=<last seq>.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	since, err := querySeq(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", defaultEventLimit, 1, maxEventLimit)
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
	ctx, cancel := s.streamContext(r, sb) // ends when the sandbox moves away
	defer cancel()
	defer s.metrics.sseStarted(r.Pattern)()
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
