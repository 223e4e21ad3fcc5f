package runtime

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refText is the reference of the text rule, written independently of textState:
// ranging over a Go string yields each complete valid sequence as its rune and each
// byte of anything else as U+FFFD of width 1. tokens are the offsets after each token
// (the unit boundaries after 0) and units the count at each.
type refText struct {
	text   []byte
	ends   []int64 // boundary offsets after each token, increasing
	counts []int64 // units at each of ends
	held   int     // running: bytes of the incomplete valid sequence at the end
}

func (r refText) units() int64 {
	if len(r.counts) == 0 {
		return 0
	}
	return r.counts[len(r.counts)-1]
}

// reference decodes stream; with running, a valid but incomplete sequence at its end
// is held back instead of counted.
func reference(stream []byte, running bool) refText {
	var ref refText
	body := stream
	if running {
		for k := min(utf8.UTFMax-1, len(stream)); k > 0; k-- {
			if !utf8.FullRune(stream[len(stream)-k:]) {
				ref.held = k
				body = stream[:len(stream)-k]
				break
			}
		}
	}
	var units int64
	s := string(body)
	for i, r := range s {
		w := utf8.RuneLen(r)
		if r == utf8.RuneError && !bytes.HasPrefix(body[i:], []byte(replacement)) {
			w = 1
		}
		if r == utf8.RuneError && w == 1 {
			ref.text = append(ref.text, replacement...)
		} else {
			ref.text = append(ref.text, body[i:i+w]...)
		}
		units += int64(utf16.RuneLen(r))
		ref.ends = append(ref.ends, int64(i+w))
		ref.counts = append(ref.counts, units)
	}
	return ref
}

// jsLength is String.length in JavaScript: UTF-16 code units.
func jsLength(text []byte) int64 {
	return int64(len(utf16.Encode([]rune(string(text)))))
}

var textCases = []struct {
	name  string
	in    string
	text  string
	units int64
}{
	{name: "empty", in: "", text: "", units: 0},
	{name: "ascii", in: "hello\r\n", text: "hello\r\n", units: 7},
	{name: "two byte", in: "h\xc3\xa9", text: "hé", units: 2},
	{name: "three byte", in: "\xe2\x94\x80\xe2\x82\xac", text: "─€", units: 2},
	{name: "four byte is a surrogate pair", in: "a\xf0\x9f\x98\x80b", text: "a😀b", units: 4},
	{name: "encoded U+FFFD is itself", in: "\xef\xbf\xbd", text: "\uFFFD", units: 1},
	{name: "stray continuation", in: "a\x80b", text: "a\uFFFDb", units: 3},
	{name: "each invalid byte", in: "\xff\xfe\xc0\xc1\xf5", text: "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD", units: 5},
	{name: "overlong", in: "\xe0\x80\xaf", text: "\uFFFD\uFFFD\uFFFD", units: 3},
	{name: "encoded surrogate", in: "\xed\xa0\x80", text: "\uFFFD\uFFFD\uFFFD", units: 3},
	{name: "above U+10FFFF", in: "\xf4\x90\x80\x80", text: "\uFFFD\uFFFD\uFFFD\uFFFD", units: 4},
	{name: "lead then ascii", in: "\xe2\x82A", text: "\uFFFD\uFFFDA", units: 3},
	{name: "lead then lead", in: "\xe2\xe2\x82\xac", text: "\uFFFD€", units: 2},
	{name: "incomplete tail flushed", in: "ok\xf0\x9f\x98", text: "ok\uFFFD\uFFFD\uFFFD", units: 5},
	{name: "lone lead flushed", in: "\xc3", text: "\uFFFD", units: 1},
	{name: "long ascii", in: "0123456789abcdef0123456789abcdef0123456789\xc3\xa9", text: "0123456789abcdef0123456789abcdef0123456789é", units: 43},
}

func TestTextEncoder(t *testing.T) {
	t.Parallel()
	for _, tt := range textCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Whole, then byte by byte: the split never changes the text or its count.
			for _, step := range []int{len(tt.in) + 1, 1, 2, 3} {
				var e TextEncoder
				var text []byte
				var units int64
				for p := []byte(tt.in); len(p) > 0; {
					k := min(step, len(p))
					var u int64
					text, u = e.Encode(text, p[:k])
					units += u
					p = p[k:]
				}
				var u int64
				text, u = e.Flush(text)
				units += u
				if string(text) != tt.text || units != tt.units {
					t.Errorf("step %d: got %q (%d units), want %q (%d units)", step, text, units, tt.text, tt.units)
				}
				if !utf8.Valid(text) || jsLength(text) != units {
					t.Errorf("step %d: text %q is not valid or its length is not %d", step, text, units)
				}
				if ref := reference([]byte(tt.in), false); string(ref.text) != tt.text || ref.units() != tt.units {
					t.Errorf("reference: %q (%d units)", ref.text, ref.units())
				}
			}
		})
	}
}

// TestTextEncoderHolds checks that an incomplete sequence is held back, not counted,
// until the bytes that complete or break it come.
func TestTextEncoderHolds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		first     string
		held      int
		then      string
		text      string
		thenUnits int64
	}{
		{name: "completed", first: "a\xf0\x9f", held: 2, then: "\x98\x80", text: "a😀", thenUnits: 2},
		{name: "broken", first: "a\xe2\x82", held: 2, then: "b", text: "a\uFFFD\uFFFDb", thenUnits: 3},
		{name: "broken by a lead", first: "\xe2", held: 1, then: "\xc3\xa9", text: "\uFFFDé", thenUnits: 2},
		{name: "nothing held", first: "ab", held: 0, then: "c", text: "abc", thenUnits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e TextEncoder
			text, u1 := e.Encode(nil, []byte(tt.first))
			if e.Held() != tt.held || u1 != int64(len(tt.first)-tt.held) {
				t.Fatalf("held %d (%d units), want %d", e.Held(), u1, tt.held)
			}
			text, u2 := e.Encode(text, []byte(tt.then))
			if string(text) != tt.text || u2 != tt.thenUnits || e.Held() != 0 {
				t.Errorf("got %q, %d units, held %d; want %q, %d", text, u2, e.Held(), tt.text, tt.thenUnits)
			}
		})
	}
}

// randomOutput returns n bytes of terminal-like output: ASCII runs, valid 2-, 3- and
// 4-byte runes, and invalid and truncated sequences.
func randomOutput(rng *rand.Rand, n int) []byte {
	pieces := [][]byte{
		[]byte("\xc3\xa9"), []byte("\xe2\x94\x80"), []byte("\xf0\x9f\x98\x80"), []byte("\xef\xbf\xbd"),
		{0x80}, {0xff}, {0xc0, 0xaf}, {0xed, 0xa0, 0x80}, {0xe2, 0x82}, {0xf0, 0x9f}, {0xf4, 0x90, 0x80, 0x80}, {0xc3},
		[]byte("\x1b[0m"), []byte("\r\n"),
	}
	out := make([]byte, 0, n+8)
	for len(out) < n {
		if rng.IntN(3) == 0 {
			out = append(out, pieces[rng.IntN(len(pieces))]...)
			continue
		}
		for k := rng.IntN(80); k > 0; k-- {
			out = append(out, byte(' '+rng.IntN(95)))
		}
	}
	return out[:n]
}

// TestTextEncoderRandom encodes random output in random chunks and checks it against
// the reference.
func TestTextEncoderRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 17))
	for range 300 {
		in := randomOutput(rng, rng.IntN(3000))
		checkEncoder(t, in, func() int { return 1 + rng.IntN(64) })
	}
}

func checkEncoder(t *testing.T, in []byte, chunk func() int) {
	t.Helper()
	ref := reference(in, false)
	var e TextEncoder
	var text []byte
	var units int64
	for p := in; len(p) > 0; {
		k := min(chunk(), len(p))
		var u int64
		text, u = e.Encode(text, p[:k])
		units += u
		p = p[k:]
	}
	text, u := e.Flush(text)
	units += u
	if !bytes.Equal(text, ref.text) || units != ref.units() {
		t.Fatalf("input %q: got %q (%d units), want %q (%d)", in, text, units, ref.text, ref.units())
	}
	if !utf8.Valid(text) || jsLength(text) != units {
		t.Fatalf("input %q: text not valid UTF-8 of %d units", in, units)
	}
}

func FuzzTextEncoder(f *testing.F) {
	for _, tt := range textCases {
		f.Add([]byte(tt.in), uint8(1))
		f.Add([]byte(tt.in), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		checkEncoder(t, in, func() int { return 1 + int(step%16) })
	})
}
