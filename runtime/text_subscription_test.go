package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// textReader reads a text ring as a TextSubscription does, and checks every event
// against the reference of the stream written so far.
type textReader struct {
	pos    TextPos
	text   []byte // the text of the output events
	gaps   int
	clean  int // output events that were Clean
	dirty  int
	exited bool
}

func (tr *textRing) drain(t *testing.T, rd *textReader, max int64) {
	t.Helper()
	for !rd.exited {
		ev, _, ok := tr.r.readText(nil, rd.pos, max)
		if !ok {
			return
		}
		if ev.From != rd.pos {
			t.Fatalf("event %+v from %+v, reader at %+v", ev.Kind, ev.From, rd.pos)
		}
		switch ev.Kind {
		case EventGap:
			rd.gaps++
			if start := tr.start(); ev.To != start {
				t.Fatalf("gap to %+v, start %+v", ev.To, start)
			}
		case EventExit:
			rd.exited = true
		case EventOutput:
			if int64(len(ev.Data)) != ev.To.Offset-ev.From.Offset || !bytes.Equal(ev.Data, tr.stream[ev.From.Offset:ev.To.Offset]) {
				t.Fatalf("output %+v..%+v: %q", ev.From, ev.To, ev.Data)
			}
			if int64(len(ev.Data)) > max && ev.To.Offset-ev.From.Offset > markEvery+utf8Cont {
				t.Fatalf("output of %d bytes, max %d", len(ev.Data), max)
			}
			text := ev.AppendText(nil)
			ref := reference(ev.Data, false)
			if !bytes.Equal(text, ref.text) || jsLength(text) != ev.To.Units-ev.From.Units {
				t.Fatalf("output %+v..%+v: text %q, want %q (%d units)", ev.From, ev.To, text, ref.text, jsLength(ref.text))
			}
			if ev.Clean {
				rd.clean++
				if !utf8.Valid(ev.Data) || !bytes.Equal(text, ev.Data) {
					t.Fatalf("clean output %q is not its own text", ev.Data)
				}
			} else {
				rd.dirty++
			}
			rd.text = append(rd.text, text...)
		}
		rd.pos = ev.To
	}
}

// TestTextRead writes output in random chunks to PTY rings and reads it as text after
// each few writes, in events of a random maximum size: every event starts where the
// last ended, ends at a boundary with the reference's count, its bytes are the
// stream's, its text is the reference's, a gap ends at the start, and Clean events are
// their own text. Without gaps the text read is all of the reference's; output that
// is valid UTF-8 throughout is Clean in every event, never decoded again.
func TestTextRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		max   int
		total int
		chunk int
		valid bool // mixedOutput, else randomOutput (invalid and cut sequences)
		gaps  bool
	}{
		{name: "valid, big ring", max: 1 << 20, total: 200000, chunk: 5000, valid: true},
		{name: "invalid bytes, big ring", max: 1 << 20, total: 200000, chunk: 5000},
		{name: "small chunks", max: 1 << 20, total: 20000, chunk: 7},
		{name: "valid, wrapping", max: 4000, total: 100000, chunk: 3000, valid: true, gaps: true},
		{name: "invalid, wrapping", max: 4000, total: 100000, chunk: 3000, gaps: true},
		{name: "tiny ring", max: 5, total: 3000, chunk: 4, gaps: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(tt.max), uint64(tt.total)))
			out := randomOutput(rng, tt.total)
			if tt.valid {
				out = mixedOutput(tt.total)[:tt.total-8] // no sequence cut at the end
			}
			tr := &textRing{r: newTextRing(tt.max)}
			rd := &textReader{}
			for len(out) > 0 {
				k := min(1+rng.IntN(tt.chunk), len(out))
				tr.write(out[:k])
				out = out[k:]
				if rng.IntN(3) == 0 {
					tr.drain(t, rd, 1+rng.Int64N(3*markEvery))
				}
			}
			tr.r.close(ExitStatus{})
			tr.drain(t, rd, maxEventBytes)
			if !rd.exited {
				t.Fatal("no exit event")
			}
			if end := tr.end(); rd.pos != end {
				t.Fatalf("read to %+v, end %+v", rd.pos, end)
			}
			if tt.gaps != (rd.gaps > 0) {
				t.Fatalf("%d gaps", rd.gaps)
			}
			if ref := reference(tr.stream, false); !tt.gaps && !bytes.Equal(rd.text, ref.text) {
				t.Fatalf("text read differs from the reference")
			}
			if tt.valid && (rd.dirty > 0 || rd.clean == 0) {
				t.Fatalf("valid output: %d clean events, %d decoded", rd.clean, rd.dirty)
			}
		})
	}
}

// TestProcessSubscribeText reads a real PTY process's output as text: valid text comes
// Clean, an invalid byte is decoded, and the text and units add up to the process's
// own positions; a process without a PTY has no text subscription.
func TestProcessSubscribeText(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{
		Command: `stty -echo; printf 'h\303\251 \360\237\230\200 '; read x; printf '\377 \342\202'`,
		PTY:     &WinSize{Cols: 80, Rows: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	start, err := p.TextStart()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := p.SubscribeText(start, SubscribeOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ev, err := sub.Next(ctx)
	if err != nil || ev.Kind != EventOutput || !ev.Clean || string(ev.Data) != "h\u00e9 \U0001F600 " || ev.To != (TextPos{Offset: 9, Units: 6}) {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if _, err := p.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	var text []byte
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventOutput {
			if ev.Clean && bytes.ContainsRune(ev.Data, 0xff) {
				t.Fatalf("clean event with an invalid byte: %q", ev.Data)
			}
			text = ev.AppendText(text)
		}
	}
	end, err := p.TextEnd()
	if want := "\uFFFD \uFFFD\uFFFD"; string(text) != want || err != nil || sub.Pos() != end || end.Units-6 != jsLength(text) {
		t.Fatalf("after the exit: %q (end %+v, at %+v, %v), want %q", text, end, sub.Pos(), err, want)
	}
	if _, err := sub.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the exit event: %v", err)
	}
	pipes, err := s.Start(ctx, StartOptions{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipes.SubscribeText(TextPos{}, SubscribeOptions{}); !errors.Is(err, ErrNoText) {
		t.Fatalf("no PTY: %v, want ErrNoText", err)
	}
}
