package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

const (
	defaultTakeMax = 100
	// maxAckIDs bounds the ids of one batch acknowledgement.
	maxAckIDs = 1000
)

type postMessageRequest struct {
	Data json.RawMessage `json:"data"`
}

// messageJSON is a taken message.
type messageJSON struct {
	ID       string          `json:"id"`
	Data     json.RawMessage `json:"data"`
	Attempts int             `json:"attempts"`
	PostedAt time.Time       `json:"posted_at"`
}

type ackRequest struct {
	IDs []string `json:"ids"`
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

// takeMessages takes visible messages and hides them for visibility_ms. The hide is
// durable before the answer is written, so a client that never reads the answer (it
// disconnected, or the server shut down) gets the messages again once it passes.
//
// A shutdown ends a take that waits for messages with an empty list, but it does not
// cut short a take whose turn is under way: that turn may commit its hide, and an
// empty 200 would then tell the client, wrongly, that nothing was taken (the messages
// would come back later with attempts counted that no answer showed). Such a take
// is answered what it took; past the shutdown grace its connection is closed, an
// outcome the client knows to be unknown.
func (s *Server) takeMessages(w http.ResponseWriter, r *http.Request) error {
	wait, err := queryMs(r, "wait_ms", maxWait)
	if err != nil {
		return err
	}
	max, err := queryInt(r, "max", defaultTakeMax, 1, actor.MaxTake)
	if err != nil {
		return err
	}
	vis, err := queryInt(r, "visibility_ms", int(actor.DefaultVisibility.Milliseconds()), 1, int(actor.MaxVisibility.Milliseconds()))
	if err != nil {
		return err
	}
	opts := actor.TakeOptions{Wait: wait, Max: max, Visibility: time.Duration(vis) * time.Millisecond, Stop: s.streamCtx.Done()}
	msgs, err := s.node.TakeMessages(r.Context(), r.PathValue("sb"), opts)
	if err != nil {
		return err
	}
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageJSON{ID: m.ID, Data: m.Data, Attempts: m.Attempts, PostedAt: m.At.UTC()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
	return nil
}

func (s *Server) ackMessage(w http.ResponseWriter, r *http.Request) error {
	if err := s.node.AckMessage(r.Context(), r.PathValue("sb"), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) ackMessages(w http.ResponseWriter, r *http.Request) error {
	var req ackRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.IDs == nil {
		return badRequest("ids is required")
	}
	if len(req.IDs) > maxAckIDs {
		return badRequest("ids holds %d ids, over the limit of %d", len(req.IDs), maxAckIDs)
	}
	for _, id := range req.IDs {
		// As for an id in the path (DELETE …/messages/{id}): a NUL byte or anything
		// that is no id is refused, not counted as a message not found.
		if !runtime.ValidID(id) {
			return badRequest("invalid message id %q in ids: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", id)
		}
	}
	acked, err := s.node.AckMessages(r.Context(), r.PathValue("sb"), req.IDs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"acked": acked})
	return nil
}
