package runtime

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// checkBulk checks bulkText on p: the prefix it proves is valid UTF-8 that ends on a
// unit boundary, with the units it says, and it makes progress.
func checkBulk(t *testing.T, p []byte) {
	t.Helper()
	n, units, checked := bulkText(p)
	switch {
	case n < 0 || n > len(p) || checked < n || checked > len(p):
		t.Fatalf("%q: n %d, checked %d of %d", p, n, checked, len(p))
	case !utf8.Valid(p[:n]):
		t.Fatalf("%q: the proven prefix %q is not valid", p, p[:n])
	case units != int64(len(utf16.Encode([]rune(string(p[:n]))))):
		t.Fatalf("%q: prefix %q counted %d units", p, p[:n], units)
	case checked == 0 && len(p) > 0:
		t.Fatalf("%q: no progress", p)
	}
	if !hasTextBlocks {
		return
	}
	// Complete: a valid input of whole blocks is proven to its last boundary.
	if whole := len(p) &^ (textBlock - 1); len(p) >= bulkMin && utf8.Valid(p[:whole]) {
		if n < whole-utf8Cont {
			t.Fatalf("%q: valid, but only %d of %d bytes proven", p, n, whole)
		}
	}
}

// bulkInputs returns inputs for the bulk path: terminal-like output, every kind of
// invalid sequence at every position of a block, and random bytes.
func bulkInputs(rng *rand.Rand) [][]byte {
	var ins [][]byte
	for range 200 {
		ins = append(ins, randomOutput(rng, rng.IntN(400)), mixedOutput(64 + rng.IntN(300))[rng.IntN(8):])
	}
	bad := []string{"\x80", "\xff", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
		"\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80",
		"\xe2\x82", "\xf0\x9f\x98", "\xc3", "\xc3\xa9\xa9", "\xe2\x82\xac\x80"}
	good := []string{"\xc3\xa9", "\xe2\x94\x80", "\xf0\x9f\x98\x80", "\xef\xbf\xbd", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xf4\x8f\xbf\xbf", "\xf0\x90\x80\x80"}
	for _, b := range bad {
		for at := range 2*textBlock + 4 {
			p := bytes.Repeat([]byte("a"), 3*textBlock)
			ins = append(ins, append(append(p[:at:at], b...), p[at:]...))
		}
	}
	for _, g := range good {
		for at := range 2*textBlock + 4 {
			p := bytes.Repeat([]byte("\xc3\xa9"), 2*textBlock)
			ins = append(ins, append(append(p[:at:at], g...), p[at:]...))
		}
	}
	for range 200 {
		p := make([]byte, rng.IntN(300))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		ins = append(ins, p)
	}
	return ins
}

// TestBulkText checks the bulk path alone on inputs with every kind of invalid
// sequence at every position of a block (see checkBulk).
func TestBulkText(t *testing.T) {
	t.Parallel()
	for _, in := range bulkInputs(rand.New(rand.NewPCG(3, 4))) {
		checkBulk(t, in)
	}
}

// TestTextFastPath decodes the same inputs with the bulk path and with the table loop
// alone, in random chunks: text, units and held bytes are the same.
func TestTextFastPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, in := range bulkInputs(rng) {
		compareFastPath(t, in, func() int { return 1 + rng.IntN(200) })
	}
}

func compareFastPath(t *testing.T, in []byte, chunk func() int) {
	t.Helper()
	fast, simple := &TextEncoder{}, &TextEncoder{}
	simple.st.noBulk = true
	var ft, st []byte
	var fu, su int64
	for p := in; len(p) > 0; {
		k := min(chunk(), len(p))
		var u int64
		ft, u = fast.Encode(ft, p[:k])
		fu += u
		st, u = simple.Encode(st, p[:k])
		su += u
		if fu != su || !bytes.Equal(ft, st) || fast.Held() != simple.Held() {
			t.Fatalf("%q, after %d bytes: fast %q (%d units, %d held), simple %q (%d, %d)",
				in, len(in)-len(p)+k, ft, fu, fast.Held(), st, su, simple.Held())
		}
		p = p[k:]
	}
}

func FuzzTextFastPath(f *testing.F) {
	for _, in := range bulkInputs(rand.New(rand.NewPCG(7, 8)))[:40] {
		f.Add(in, uint8(255))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		checkBulk(t, in)
		compareFastPath(t, in, func() int { return 1 + int(step) })
	})
}
