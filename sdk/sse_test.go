package sdk

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

var sseTests = []struct {
	name string
	in   string
	want []sseEvent
	rest string // what is left unconsumed
}{
	{"empty", "", nil, ""},
	{"one event", "event: output\nid: 5\ndata: {\"a\":1}\n\n",
		[]sseEvent{{Event: "output", ID: "5", HasID: true, Data: `{"a":1}`}}, ""},
	{"no space after colon", "event:gap\ndata:x\n\n", []sseEvent{{Event: "gap", Data: "x"}}, ""},
	{"only one space stripped", "data:  x\n\n", []sseEvent{{Data: " x"}}, ""},
	{"multi-line data", "data: a\ndata: b\ndata:\n\n", []sseEvent{{Data: "a\nb\n"}}, ""},
	{"comments skipped", ": heartbeat\n\n: x\ndata: y\n\n", []sseEvent{{Data: "y"}}, ""},
	{"crlf", "event: exit\r\ndata: {}\r\n\r\n", []sseEvent{{Event: "exit", Data: "{}"}}, ""},
	{"cr only", "data: a\rdata: b\r\r\r", []sseEvent{{Data: "a\nb"}}, "\r"},
	{"trailing cr waits", "data: a\n\r", nil, "data: a\n\r"},
	{"incomplete event kept", "data: a\n\ndata: b\n", []sseEvent{{Data: "a"}}, "data: b\n"},
	{"incomplete line kept", "data: a\n\nda", []sseEvent{{Data: "a"}}, "da"},
	{"field without colon", "data\n\n", []sseEvent{{Data: ""}}, ""},
	{"id only", "id: 7\n\n", []sseEvent{{ID: "7", HasID: true}}, ""},
	{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []sseEvent{{Data: "x"}}, ""},
	{"unknown fields ignored", "retry: 10\nfoo: bar\ndata: x\n\n", []sseEvent{{Data: "x"}}, ""},
	{"blank lines alone dispatch nothing", "\n\n\r\n", nil, ""},
	{"two events", "data: 1\n\ndata: 2\n\n", []sseEvent{{Data: "1"}, {Data: "2"}}, ""},
	{"colon in value", "data: a:b\n\n", []sseEvent{{Data: "a:b"}}, ""},
}

func TestParseSSE(t *testing.T) {
	t.Parallel()
	for _, tt := range sseTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, n := parseSSE([]byte(tt.in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %#v, want %#v", got, tt.want)
			}
			if rest := tt.in[n:]; rest != tt.rest {
				t.Errorf("rest = %q, want %q", rest, tt.rest)
			}
		})
	}
}

// parseAll feeds p to parseSSE in pieces of the given sizes, as a stream reader would.
func parseAll(p []byte, sizes []int) []sseEvent {
	var out []sseEvent
	var buf []byte
	for len(p) > 0 {
		k := len(p)
		if len(sizes) > 0 {
			k = min(max(sizes[0], 1), len(p))
			sizes = sizes[1:]
		}
		buf = append(buf, p[:k]...)
		p = p[k:]
		evs, n := parseSSE(buf)
		out = append(out, evs...)
		buf = buf[n:]
	}
	return out
}

func FuzzParseSSE(f *testing.F) {
	for _, tt := range sseTests {
		f.Add([]byte(tt.in), uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, p []byte, a, b uint8) {
		whole, n := parseSSE(p)
		if n < 0 || n > len(p) {
			t.Fatalf("n = %d out of range [0,%d]", n, len(p))
		}
		if n > 0 && p[n-1] != '\n' && p[n-1] != '\r' {
			t.Fatalf("consumed %q, which does not end at a line end", p[:n])
		}
		// The consumed prefix followed by a partial line parses the same.
		again, m := parseSSE(append(p[:n:n], 'x'))
		if m != n || !reflect.DeepEqual(again, whole) {
			t.Fatalf("reparsing the consumed prefix differs: %v/%d vs %v/%d", again, m, whole, n)
		}
		pieces := parseAll(p, []int{int(a), int(b), int(a) + int(b)})
		if !reflect.DeepEqual(normalize(pieces), normalize(whole)) {
			t.Fatalf("pieces %#v != whole %#v", pieces, whole)
		}
	})
}

// normalize makes nil and empty event lists compare equal.
func normalize(evs []sseEvent) []sseEvent {
	if len(evs) == 0 {
		return nil
	}
	return evs
}

// oneByteReader returns one byte per Read, to exercise buffering.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:1]) }

func TestSSEReader(t *testing.T) {
	t.Parallel()
	in := "event: output\r\nid: 3\r\ndata: abc\r\n\r\n: ping\n\nevent: exit\ndata: {}\n\ndata: partial"
	r := newSSEReader(oneByteReader{strings.NewReader(in)})
	want := []sseEvent{{Event: "output", ID: "3", HasID: true, Data: "abc"}, {Event: "exit", Data: "{}"}}
	for i, w := range want {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !reflect.DeepEqual(ev, w) {
			t.Fatalf("event %d = %#v, want %#v", i, ev, w)
		}
	}
	if _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: err = %v, want EOF", err)
	}
}

func TestSSEReaderTooLarge(t *testing.T) {
	t.Parallel()
	r := newSSEReader(io.MultiReader(strings.NewReader("data: "), neverEnding('x')))
	if _, err := r.next(); !errors.Is(err, errSSETooLarge) {
		t.Fatalf("err = %v, want errSSETooLarge", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}
