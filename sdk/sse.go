package sdk

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Event string // the event field; "" when absent (the SSE default type "message")
	ID    string // the id field, valid when HasID
	HasID bool
	Data  string // the data lines joined by "\n"
}

// parseSSE parses the complete events at the start of p, a prefix of a
// text/event-stream body, and returns them with the number of bytes they used. The rest
// of p (an event not yet ended by a blank line) is left for the next call, with more
// bytes appended. Lines end in "\n", "\r\n" or "\r"; a "\r" at the very end of p is
// not taken as a line end yet, as a "\n" may follow. Comment lines (":" first) are
// skipped, a single space after a field's colon is dropped, unknown fields (retry
// included) are ignored, and an id holding NUL is ignored, as the SSE standard says.
// An event is dispatched when it had a data, id or event field.
//
// parseSSE is a pure function: parsing p in one call or in pieces, each call fed what
// the last one left, gives the same events.
func parseSSE(p []byte) (events []sseEvent, n int) {
	var (
		cur     sseEvent
		data    strings.Builder
		hasData bool
		seen    bool
		pos     int
	)
	for pos < len(p) {
		i := bytes.IndexAny(p[pos:], "\r\n")
		if i < 0 {
			break
		}
		end := pos + i
		next := end + 1
		if p[end] == '\r' {
			if next >= len(p) {
				break
			}
			if p[next] == '\n' {
				next++
			}
		}
		line := p[pos:end]
		pos = next
		if len(line) == 0 {
			if seen {
				if hasData {
					cur.Data = data.String()
				}
				events = append(events, cur)
			}
			cur, hasData, seen = sseEvent{}, false, false
			data.Reset()
			n = pos
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			cur.Event, seen = string(value), true
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData, seen = true, true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				cur.ID, cur.HasID, seen = string(value), true, true
			}
		}
	}
	if n == 0 && len(events) == 0 {
		return nil, 0
	}
	return events, n
}

// maxSSEEvent bounds the bytes of one event, so a broken stream cannot exhaust memory.
const maxSSEEvent = 8 << 20

// sseReader reads events from a text/event-stream body. It is not safe for
// concurrent use.
type sseReader struct {
	r       io.Reader
	buf     []byte
	pending []sseEvent
	chunk   []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: r, chunk: make([]byte, 32<<10)}
}

// next returns the next event, or the read error (io.EOF at the end of the body).
func (s *sseReader) next() (sseEvent, error) {
	parse := true
	for len(s.pending) == 0 {
		// Reparse only when a line may have ended, so a long line costs linear time.
		if parse {
			evs, n := parseSSE(s.buf)
			if n > 0 {
				s.buf = append(s.buf[:0], s.buf[n:]...)
			}
			if len(evs) > 0 {
				s.pending = evs
				break
			}
		}
		if len(s.buf) > maxSSEEvent {
			return sseEvent{}, fmt.Errorf("%w: over %d bytes", errSSETooLarge, maxSSEEvent)
		}
		m, err := s.r.Read(s.chunk)
		parse = bytes.ContainsAny(s.chunk[:m], "\r\n") || bytes.HasSuffix(s.buf, []byte{'\r'})
		s.buf = append(s.buf, s.chunk[:m]...)
		if err != nil && m == 0 {
			return sseEvent{}, err
		}
	}
	ev := s.pending[0]
	s.pending = s.pending[1:]
	return ev, nil
}
