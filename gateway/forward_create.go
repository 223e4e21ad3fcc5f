package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/sandgate/sandgate/runtime"
)

// createTarget finds the sandbox a create is for: the body's id, or else the one the
// accepting node made (madeIDHeader). When makeID is set (the accepting node) and the
// body names none, an id is made here and set in that header, replacing any the
// client sent, so the create goes to that id's owner and is made under it there; the
// body itself is left as the client sent it. The id has the format of the actor's own
// server-made ids. sb is "" when the body is one the handler refuses (malformed, or
// over the limit): it is served where it is, and answered 400 or 413.
func (s *Server) createTarget(r *http.Request, makeID bool) (sb string, body *replayBody, err error) {
	if makeID {
		r.Header.Del(madeIDHeader)
	}
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
		return madeID(r), body, nil
	}
	id := newSandboxID()
	r.Header.Set(madeIDHeader, id)
	return id, body, nil
}

// madeID is the id an accepting node made for a create without one (madeIDHeader),
// or "" when there is none that is an id.
func madeID(r *http.Request) string {
	if id := r.Header.Get(madeIDHeader); runtime.ValidID(id) {
		return id
	}
	return ""
}

// newSandboxID returns "sb_" and 16 random hex digits, as the actor makes them.
func newSandboxID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sb_" + hex.EncodeToString(b[:])
}
