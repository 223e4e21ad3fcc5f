package gateway

import (
	"io"
	"net/http"
	"strings"
)

// Sending a forwarded request again after its connection broke.
//
// A kept-alive connection to an owner that breaks before any answer was most often
// closed idle by the owner (a node shutting down closes its idle connections) with
// the request unread, and sending it again is what the client wants. But the owner
// may also have read the request, served it and gone down before its answer left: a
// second send would then run it twice, and the client would see only the second
// answer. So a request is sent again after such a break only when a second run
// changes nothing the first did not (replaySafe); any other is answered 503 with
// Retry-After, its outcome unknown, for the client to decide. Go's transport sends a
// GET again by itself in the same case (other methods only when nothing was written),
// so a GET that is not safe to repeat goes out with a body the transport cannot rewind
// (noReplayBody), which stops it.

// replaySafe reports whether r may be sent to the owner a second time when the first
// send may have been served: reads (GET, HEAD), except the take of queued messages,
// which hides what it takes; and PUT, which sets a file or a terminal to what it names.
func replaySafe(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return !isMessageTake(r)
	case http.MethodPut:
		return true
	}
	return false
}

// isMessageTake reports whether r is GET /v1/sandboxes/{sb}/messages.
func isMessageTake(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/sandboxes/")
	if !ok || r.Method != http.MethodGet {
		return false
	}
	sb, tail, ok := strings.Cut(rest, "/")
	return ok && sb != "" && tail == "messages"
}

// noReplayBody is an empty request body without GetBody: the transport sends no body
// for it (a GET's body is probed first) and never sends the request again by itself.
type noReplayBody struct{}

func (noReplayBody) Read([]byte) (int, error) { return 0, io.EOF }
func (noReplayBody) Close() error             { return nil }
