package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Lists written as they are produced.
//
// A list answer ({"sandboxes": [...]}) is written item by item as its items come, so a
// long one is held whole neither as items nor as JSON: a node of 100,000 sandboxes
// answers its list in about 100 MB of JSON, which building first would hold twice.
//
//  1. Items are encoded one at a time into a buffer. The first listFlushBytes are held
//     back: a list that fits is sent whole, with a Content-Length, exactly as writeJSON
//     would send it, and an error met before anything was sent is still answered in
//     the error shape.
//  2. Past listFlushBytes the status is sent and the buffer goes out each time it fills
//     (chunked), while the producer goes on; the response's write deadline
//     (deadline.go) bounds each wait for the client.
//  3. An error after the status was sent can no longer be an error answer. The
//     response is cut (http.ErrAbortHandler, the way net/http offers to abandon a
//     response): the client sees a broken response, never a list that reads as whole.
//
// The bytes are those of json.Marshal of the whole answer, so clients see no change.

// listFlushBytes is how much of a list is held before it is sent: lists up to this
// size are answered whole, with a Content-Length.
const listFlushBytes = 64 << 10

// jsonList writes one list answer. It is used by one handler goroutine.
type jsonList struct {
	w       http.ResponseWriter
	buf     []byte
	items   int
	started bool // the status was sent
}

// newJSONList starts the answer {"<name>": [...]} on w.
func newJSONList(w http.ResponseWriter, name string) *jsonList {
	l := &jsonList{w: w, buf: make([]byte, 0, 4<<10)}
	l.buf = append(l.buf, `{"`...)
	l.buf = append(l.buf, name...)
	l.buf = append(l.buf, `":[`...)
	return l
}

// add appends v to the list, sending what is held once it passes listFlushBytes. An
// error means the client cannot take more (or v cannot be encoded): the caller stops
// and hands it to fail.
func (l *jsonList) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("failed to encode list item: %w", err)
	}
	if l.items > 0 {
		l.buf = append(l.buf, ',')
	}
	l.items++
	l.buf = append(l.buf, b...)
	if len(l.buf) < listFlushBytes {
		return nil
	}
	if !l.started {
		l.w.Header().Set("Content-Type", "application/json")
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	_, err = l.w.Write(l.buf)
	l.buf = l.buf[:0]
	if err != nil {
		return fmt.Errorf("failed to send list: %w", err)
	}
	return nil
}

// end closes the list and sends what is left: the whole answer, with its length, if
// nothing was sent yet.
func (l *jsonList) end() {
	l.buf = append(l.buf, "]}\n"...)
	if !l.started {
		h := l.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(l.buf)))
		l.w.WriteHeader(http.StatusOK)
	}
	_, _ = l.w.Write(l.buf)
}

// listFailed handles an error that ended list l: before anything was sent it is
// returned, for the handler to answer in the error shape; after, it is logged and the
// response is cut (step 3).
func (s *Server) listFailed(r *http.Request, l *jsonList, err error) error {
	if !l.started {
		return err
	}
	if r.Context().Err() == nil { // not merely a client that went away
		s.log.Warn("list cut short", "path", r.URL.Path, "items", l.items, "err", err)
	}
	panic(http.ErrAbortHandler)
}
