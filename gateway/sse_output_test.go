package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runtime"
)

// sample has characters of one to four bytes, and a U+FFFD of its own (not a
// replacement).
const sample = "a\u00e9\u20ac\U0001F600\uFFFDz\n"

// parseSSE splits the text of an SSE response into events.
func parseSSE(body string) []sseEvent {
	var events []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				e.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				e.data = line[len("data: "):]
			}
		}
		if e.name != "" {
			events = append(events, e)
		}
	}
	return events
}

// textOf checks the utf8 output events of events and returns their text, whether any
// said replaced, and the ids of the output events. Each event's id must be its offset
// plus the bytes it stands for, and the events must follow each other without a hole.
func textOf(t testing.TB, events []sseEvent, from int64) (text string, replaced bool, ids []int64) {
	t.Helper()
	next := from
	for _, e := range events {
		if e.name != "output" {
			continue
		}
		var o outputTextJSON
		if err := json.Unmarshal([]byte(e.data), &o); err != nil {
			t.Fatalf("output event %q: %v", e.data, err)
		}
		if strings.Contains(e.data, `"data"`) {
			t.Fatalf("a utf8 event carries base64 data: %s", e.data)
		}
		id, err := strconv.ParseInt(e.id, 10, 64)
		if err != nil || o.Offset != next || id <= o.Offset {
			t.Fatalf("event %q (id %q) after offset %d", e.data, e.id, next)
		}
		next = id
		text += o.Text
		replaced = replaced || o.Replaced
		ids = append(ids, id)
	}
	return text, replaced, ids
}

// TestOutputTextSplits feeds sample to the utf8 encoder cut into three chunks at every
// pair of offsets: the text always comes out whole, nothing is replaced, and every id
// falls on a character boundary. A character cut short by a gap, the exit or the other
// stream's output is replaced and said so.
func TestOutputTextSplits(t *testing.T) {
	t.Parallel()
	src := []byte(sample)
	run := func(events ...runtime.Event) []sseEvent {
		rec := httptest.NewRecorder()
		out := newOutputSSE(newSSEWriter(rec, time.Second), encodingUTF8)
		for _, ev := range events {
			if err := out.write(ev); err != nil {
				t.Fatal(err)
			}
		}
		return parseSSE(rec.Body.String())
	}
	chunk := func(stream runtime.Stream, from, to int) runtime.Event {
		return runtime.Event{Kind: runtime.EventOutput, Stream: stream, Offset: int64(from), Data: append([]byte(nil), src[from:to]...)}
	}
	exit := runtime.Event{Kind: runtime.EventExit}
	for i := 0; i <= len(src); i++ {
		for j := i; j <= len(src); j++ {
			events := run(chunk(runtime.StreamPTY, 0, i), chunk(runtime.StreamPTY, i, j), chunk(runtime.StreamPTY, j, len(src)), exit)
			text, replaced, ids := textOf(t, events, 0)
			if text != sample || replaced {
				t.Fatalf("cut at %d and %d: %q (replaced %v), want %q", i, j, text, replaced, sample)
			}
			for _, id := range ids {
				if !utf8.RuneStart(append(src, 0)[id]) {
					t.Fatalf("cut at %d and %d: id %d inside a character", i, j, id)
				}
			}
			if last := events[len(events)-1]; last.name != "exit" {
				t.Fatalf("cut at %d and %d: last event %q", i, j, last.name)
			}
		}
	}

	euro := strings.Index(sample, "\u20ac")
	tests := []struct {
		name   string
		events []runtime.Event
		want   string
	}{
		{"exit after half a character", []runtime.Event{chunk(runtime.StreamStdout, 0, euro+2), exit},
			"a\u00e9\uFFFD\uFFFD"},
		{"gap after half a character", []runtime.Event{chunk(runtime.StreamStdout, 0, euro+1),
			{Kind: runtime.EventGap, From: int64(euro + 1), To: int64(euro + 3)}, chunk(runtime.StreamStdout, euro+3, len(src))},
			"a\u00e9\uFFFD" + sample[euro+3:]},
		{"the other stream in between", []runtime.Event{chunk(runtime.StreamStdout, 0, euro+1), chunk(runtime.StreamStderr, euro+1, len(src))},
			"a\u00e9\uFFFD\uFFFD\uFFFD" + sample[euro+3:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := run(tt.events...)
			var text string
			replaced := false
			for _, e := range events {
				var o outputTextJSON
				if e.name == "output" {
					if err := json.Unmarshal([]byte(e.data), &o); err != nil {
						t.Fatal(err)
					}
					text += o.Text
					replaced = replaced || o.Replaced
				}
			}
			if text != tt.want || !replaced {
				t.Fatalf("text %q (replaced %v), want %q, replaced", text, replaced, tt.want)
			}
		})
	}
}

// TestOutputSSEUTF8 streams a real process's output with ?encoding=utf8 from every
// byte offset by Last-Event-ID: the text is what a UTF-8 decoder makes of the bytes from
// there (a start inside a character gives a U+FFFD per byte of it), invalid bytes are
// replaced and the event says so, and the ids resume the stream where they say.
func TestOutputSSEUTF8(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("u8")
	// printf's octal escapes: the bytes of sample, then an invalid byte 0xff.
	want := sample + "\xff!\n"
	var esc strings.Builder
	for _, b := range []byte(want) {
		esc.WriteString("\\" + strconv.FormatInt(int64(b), 8))
	}
	var p struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/u8/processes", map[string]any{
		"argv": []string{"printf", esc.String()}, "keep_ms": 600000}).json(t, &p)
	path := "/v1/sandboxes/u8/processes/" + p.ID + "/output?encoding=utf8"
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/u8/processes/"+p.ID+"?wait_ms=30000", nil)

	events := ts.readSSE(path, "", 30*time.Second, lastIs("exit"))
	text, replaced, ids := textOf(t, events, 0)
	if wantText := sample + "\uFFFD!\n"; text != wantText || !replaced {
		t.Fatalf("text %q (replaced %v), want %q, replaced", text, replaced, wantText)
	}
	if ids[len(ids)-1] != int64(len(want)) {
		t.Fatalf("last id %d, want %d (the byte offset of the end)", ids[len(ids)-1], len(want))
	}
	for k := 1; k < len(want); k++ {
		t.Run("from "+strconv.Itoa(k), func(t *testing.T) {
			events := ts.readSSE(path, strconv.Itoa(k), 30*time.Second, lastIs("exit"))
			text, _, _ := textOf(t, events, int64(k))
			expect, _ := toText([]byte(want[k:]))
			if text != expect {
				t.Fatalf("from %d: %q, want %q", k, text, expect)
			}
		})
	}

	tests := []struct {
		name, query string
		want        int
	}{
		{"explicit base64", "?encoding=base64", http.StatusOK},
		{"unknown encoding", "?encoding=latin1", http.StatusBadRequest},
		{"UTF-8 spelled with a dash", "?encoding=UTF-8", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("GET", "/v1/sandboxes/u8/processes/"+p.ID+"/output"+tt.query, nil)
			if r.status != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.query, r.status, r.body, tt.want)
			}
		})
	}
}

// FuzzOutputText: however the output is cut into two chunks of one stream, the text
// the utf8 encoder sends is what decoding the whole output at once gives, and it is
// said to be replaced exactly when that decoding replaced something.
func FuzzOutputText(f *testing.F) {
	f.Add([]byte(sample), 3)
	f.Add([]byte("\xe2\x82"+"\xf0\x9f\x98\x80"), 2)
	f.Add([]byte("x\xff\xc3"), 2)
	f.Fuzz(func(t *testing.T, src []byte, cut int) {
		if len(src) == 0 {
			return
		}
		cut = min(max(cut, 0), len(src))
		rec := httptest.NewRecorder()
		out := newOutputSSE(newSSEWriter(rec, time.Second), encodingUTF8)
		for _, ev := range []runtime.Event{
			{Kind: runtime.EventOutput, Stream: runtime.StreamStdout, Offset: 0, Data: append([]byte(nil), src[:cut]...)},
			{Kind: runtime.EventOutput, Stream: runtime.StreamStdout, Offset: int64(cut), Data: append([]byte(nil), src[cut:]...)},
			{Kind: runtime.EventExit},
		} {
			if err := out.write(ev); err != nil {
				t.Fatal(err)
			}
		}
		text, replaced, ids := textOf(t, parseSSE(rec.Body.String()), 0)
		want, wantReplaced := toText(src)
		if text != want || replaced != wantReplaced {
			t.Fatalf("cut %q at %d: %q (replaced %v), want %q (%v)", src, cut, text, replaced, want, wantReplaced)
		}
		if ids[len(ids)-1] != int64(len(src)) {
			t.Fatalf("cut %q at %d: last id %d", src, cut, ids[len(ids)-1])
		}
	})
}
