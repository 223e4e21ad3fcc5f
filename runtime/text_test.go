package runtime

import (
	"errors"
	"testing"
)

// TestProcessText follows the text positions of a real PTY process: a 4-byte rune (a
// surrogate pair), a sequence held back while it is incomplete and completed by later
// output, and incomplete bytes counted as U+FFFD at the exit.
func TestProcessText(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{
		Command: `stty -echo; printf 'h\303\251 \360\237\230\200 \342\202'; read x; printf '\254!'`,
		PTY:     &WinSize{Cols: 80, Rows: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	waitOutput(t, ctx, sub, "h\u00e9 \U0001F600 \xe2\x82")
	tests := []struct {
		name  string
		f     func() (TextPos, error)
		want  TextPos
		error error
	}{
		{name: "start", f: p.TextStart, want: TextPos{}},
		{name: "end holds the incomplete euro sign", f: p.TextEnd, want: TextPos{Offset: 9, Units: 6}},
		{name: "seek after the two-byte rune", f: func() (TextPos, error) { return p.TextSeek(2) }, want: TextPos{Offset: 3, Units: 2}},
		{name: "seek inside the pair", f: func() (TextPos, error) { return p.TextSeek(4) }, want: TextPos{Offset: 4, Units: 3}},
		{name: "seek after the pair", f: func() (TextPos, error) { return p.TextSeek(5) }, want: TextPos{Offset: 8, Units: 5}},
		{name: "seek past the end", f: func() (TextPos, error) { return p.TextSeek(100) }, want: TextPos{Offset: 9, Units: 6}},
	}
	for _, tt := range tests {
		if got, err := tt.f(); got != tt.want || !errors.Is(err, tt.error) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	if _, err := p.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	c := collect(t, ctx, sub)
	if c.exit == nil {
		t.Fatal("no exit")
	}
	end, err := p.TextEnd()
	if want := (TextPos{Offset: 13, Units: 8}); end != want || err != nil {
		t.Errorf("end after the exit: %+v, %v; want %+v", end, err, want)
	}
	from, err := p.TextSeek(3)
	if err != nil {
		t.Fatal(err)
	}
	again := p.Subscribe(from.Offset)
	defer again.Close()
	var e TextEncoder
	text, units := e.Encode(nil, collect(t, ctx, again).pty)
	text, f := e.Flush(text)
	if string(text) != "\U0001F600 \u20ac!" || from.Units+units+f != end.Units || jsLength(text) != units+f {
		t.Errorf("encoded from %+v: %q, %d units", from, text, units+f)
	}
}

// TestProcessTextHeldAtExit checks that bytes of a sequence the process never
// finished count as one U+FFFD each once it exits, and that TextEnd is then the end.
func TestProcessTextHeldAtExit(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Command: `printf 'ok\342\202'`, PTY: &WinSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if end, err := p.TextEnd(); end != (TextPos{Offset: 4, Units: 4}) || err != nil {
		t.Errorf("end %+v, %v; want 4 bytes, 4 units", end, err)
	}
	if pos, err := p.TextSeek(3); pos != (TextPos{Offset: 3, Units: 3}) || err != nil {
		t.Errorf("seek 3: %+v, %v", pos, err)
	}
}
