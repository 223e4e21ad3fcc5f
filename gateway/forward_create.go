package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// createTarget finds the sandbox a create is for: the body's id, or, when makeID is
// set (the accepting node) and the body names none, an id made here and written into
// the body, so the create goes to that id's owner. The id has the format of the
// actor's own server-made ids. sb is "" when the body is one the handler refuses
// (malformed, or over the limit): it is served where it is, and answered 400 or 413.
func (s *Server) createTarget(r *http.Request, makeID bool) (sb string, body *replayBody, err error) {
	if body, err = readBody(r); err != nil {
		return "", nil, err
	}
	if body.streamed() {
		return "", body, nil // over the JSON limit: 413
	}
	var req createSandboxRequest
	if decodeJSONBytes(body.buf, &req) != nil {
		return "", body, nil
	}
	switch id, err := optionalID("sandbox", req.ID); {
	case err != nil:
		return "", body, nil
	case id != "":
		return id, body, nil
	case !makeID:
		return "", body, nil
	}
	id := newSandboxID()
	var fields map[string]json.RawMessage
	if len(body.buf) > 0 {
		if err := json.Unmarshal(body.buf, &fields); err != nil {
			return "", body, nil
		}
	}
	if fields == nil { // an empty body, or null: the same as {}
		fields = map[string]json.RawMessage{}
	}
	fields["id"], _ = json.Marshal(id)
	b, err := json.Marshal(fields)
	if err != nil {
		return "", body, nil
	}
	return id, &replayBody{buf: b}, nil
}

// newSandboxID returns "sb_" and 16 random hex digits, as the actor makes them.
func newSandboxID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sb_" + hex.EncodeToString(b[:])
}
