package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runtime"
)

// The process output SSE stream sends output as base64 by default (bytes as they are,
// whatever they are) or, with ?encoding=utf8, as text that curl shows as it is:
//
//   - Event ids stay byte offsets, so Last-Event-ID resumes the same way in both.
//   - A character split across chunks is held back until it is complete: an event ends
//     on a character boundary, and its id is the offset after its last whole character.
//   - Bytes that are not part of a valid UTF-8 character are each replaced by U+FFFD,
//     and the event says so ("replaced": true). So are the bytes of a character cut
//     short for good: by a gap, the exit, or output of the other stream in between
//     (stdout and stderr share one offset, so a character of one cannot wait across
//     the other's bytes without an id that skips them).

const (
	encodingBase64 = "base64"
	encodingUTF8   = "utf8"
)

// outputEncoding returns the ?encoding= of an output stream: "base64" (the default) or
// "utf8".
func outputEncoding(r *http.Request) (string, error) {
	switch e := r.URL.Query().Get("encoding"); e {
	case "", encodingBase64:
		return encodingBase64, nil
	case encodingUTF8:
		return encodingUTF8, nil
	default:
		return "", badRequest("encoding must be base64 or utf8, not %q", e)
	}
}

// outputEventJSON is the data of an SSE output event in base64.
type outputEventJSON struct {
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
}

// outputTextJSON is the data of an SSE output event with ?encoding=utf8.
type outputTextJSON struct {
	Stream   string `json:"stream"`
	Offset   int64  `json:"offset"`
	Text     string `json:"text"`
	Replaced bool   `json:"replaced"`
}

// outputSSE writes the events of one process output stream in its encoding. It is
// used by the stream's one writing goroutine.
type outputSSE struct {
	sse  *sseWriter
	text bool
	// In text: an incomplete character at the end of the last chunk, of stream
	// heldStream, starting at offset heldAt.
	held       []byte
	heldStream runtime.Stream
	heldAt     int64
}

func newOutputSSE(sse *sseWriter, encoding string) *outputSSE {
	return &outputSSE{sse: sse, text: encoding == encodingUTF8}
}

// write sends ev (output, a gap or the exit).
func (o *outputSSE) write(ev runtime.Event) error {
	switch ev.Kind {
	case runtime.EventOutput:
		if o.text {
			return o.writeText(ev)
		}
		b, _ := json.Marshal(outputEventJSON{
			Stream: string(ev.Stream), Offset: ev.Offset, Data: base64.StdEncoding.EncodeToString(ev.Data),
		})
		return o.sse.Event("output", strconv.FormatInt(ev.Offset+int64(len(ev.Data)), 10), b)
	case runtime.EventGap:
		if err := o.flush(); err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]int64{"from": ev.From, "to": ev.To})
		return o.sse.Event("gap", strconv.FormatInt(ev.To, 10), b)
	case runtime.EventExit:
		if err := o.flush(); err != nil {
			return err
		}
		code, sig := exitFields(ev.Exit)
		b, _ := json.Marshal(map[string]any{"exit_code": code, "signal": sig})
		return o.sse.Event("exit", "", b)
	}
	return nil
}

// writeText sends the whole characters of the held bytes and ev's, and holds an
// incomplete one at the end back.
func (o *outputSSE) writeText(ev runtime.Event) error {
	if len(o.held) > 0 && (o.heldStream != ev.Stream || o.heldAt+int64(len(o.held)) != ev.Offset) {
		if err := o.flush(); err != nil {
			return err
		}
	}
	buf, at := ev.Data, ev.Offset
	if len(o.held) > 0 {
		buf, at = append(o.held, ev.Data...), o.heldAt
	}
	n := len(buf) - incompleteTail(buf)
	o.held = append(o.held[:0:0], buf[n:]...)
	o.heldStream, o.heldAt = ev.Stream, at+int64(n)
	if n == 0 {
		return nil
	}
	return o.sendText(ev.Stream, at, buf[:n])
}

// flush sends held bytes, a character that will not be completed, as replaced.
func (o *outputSSE) flush() error {
	if len(o.held) == 0 {
		return nil
	}
	held := o.held
	o.held = nil
	return o.sendText(o.heldStream, o.heldAt, held)
}

func (o *outputSSE) sendText(stream runtime.Stream, at int64, p []byte) error {
	text, replaced := toText(p)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" stays "<" for a human reading with curl
	_ = enc.Encode(outputTextJSON{Stream: string(stream), Offset: at, Text: text, Replaced: replaced})
	return o.sse.Event("output", strconv.FormatInt(at+int64(len(p)), 10), bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// incompleteTail returns how many bytes at the end of p are the start of a UTF-8
// character that more bytes could complete (0 to 3).
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return 0 // complete, or invalid whatever follows
			}
			return len(p) - i
		}
	}
	return 0
}

// toText returns p as a string with each byte that is not part of a valid UTF-8
// character replaced by U+FFFD, and whether any was.
func toText(p []byte) (string, bool) {
	if utf8.Valid(p) {
		return string(p), false
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(p[:size])
		}
		p = p[size:]
	}
	return b.String(), true
}
