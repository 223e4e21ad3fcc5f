package runtime

import (
	"encoding/binary"
	"unicode/utf8"
)

// replacement is U+FFFD in UTF-8: the text of one byte of an invalid sequence.
const replacement = "\uFFFD"

// TextEncoder turns PTY output bytes, read in order from a unit boundary (a TextPos),
// into valid UTF-8 text, exactly as the process's text index counts it:
//
//   - a complete, valid UTF-8 sequence is itself: 1 UTF-16 unit, or 2 for a rune
//     above U+FFFF (a 4-byte sequence, a surrogate pair in UTF-16);
//   - each byte of an invalid sequence (a stray continuation byte, an overlong form,
//     an encoded surrogate, a lead byte that the next byte does not continue, bytes
//     C0, C1, F5–FF) is one U+FFFD: 1 unit;
//   - a valid but incomplete sequence at the end of what was given is held back (at
//     most 3 bytes) until more bytes come; Flush, at the process's exit, turns each
//     held byte into one U+FFFD.
//
// So a reader that starts at a TextPos and adds up the units of what it encoded lands
// on the index's own count at every point, and its text is what a JavaScript client
// measures with String.length. The zero value is ready to use, at a boundary. A
// TextEncoder is not safe for concurrent use.
type TextEncoder struct {
	st textState
}

// Encode appends the text of p (after any bytes held from the last call) to dst and
// returns it with the number of UTF-16 units it added.
func (e *TextEncoder) Encode(dst, p []byte) (text []byte, units int64) {
	return e.st.feed(dst, p, true)
}

// Flush appends one U+FFFD per held byte to dst, as the index counts them once the
// process has exited, and returns it with their units. The encoder is then at a
// boundary again.
func (e *TextEncoder) Flush(dst []byte) (text []byte, units int64) {
	return e.st.flush(dst, true)
}

// Held returns how many bytes of an incomplete sequence Encode holds back.
func (e *TextEncoder) Held() int { return e.st.n }

// textState is the decoder state shared by TextEncoder and the ring's text index:
// one decoding rule, one implementation (see TextEncoder for the rule).
type textState struct {
	held [utf8.UTFMax - 1]byte // a valid, incomplete sequence
	n    int                   // bytes in held
}

// feed decodes p after the held bytes. With emit it appends the text to dst. It
// returns dst and the units of the complete tokens; an incomplete tail is held.
func (s *textState) feed(dst, p []byte, emit bool) ([]byte, int64) {
	var units int64
	if s.n > 0 {
		// Finish the held sequence with up to 3 bytes of p: enough to decide it.
		var c [2*utf8.UTFMax - 2]byte
		k := copy(c[:], s.held[:s.n])
		k += copy(c[k:], p)
		i := 0
		for i < s.n {
			size, u, valid := textToken(c[i:k])
			if size == 0 { // still incomplete: p was shorter than the rest of it
				s.n = copy(s.held[:], c[i:k])
				return dst, units
			}
			units += int64(u)
			if emit {
				dst = emitToken(dst, c[i:i+size], valid)
			}
			i += size
		}
		p = p[i-s.n:]
		s.n = 0
	}
	for len(p) > 0 {
		if p[0] < utf8.RuneSelf {
			k := asciiRun(p)
			units += int64(k)
			if emit {
				dst = append(dst, p[:k]...)
			}
			p = p[k:]
			continue
		}
		size, u, valid := textToken(p)
		if size == 0 {
			s.n = copy(s.held[:], p)
			return dst, units
		}
		units += int64(u)
		if emit {
			dst = emitToken(dst, p[:size], valid)
		}
		p = p[size:]
	}
	return dst, units
}

// flush ends the stream: each held byte is one U+FFFD.
func (s *textState) flush(dst []byte, emit bool) ([]byte, int64) {
	n := s.n
	s.n = 0
	if emit {
		for range n {
			dst = append(dst, replacement...)
		}
	}
	return dst, int64(n)
}

// textToken decodes the token at the start of p (not empty): a valid sequence of size
// bytes, or (valid false) one invalid byte, with its UTF-16 units. size is 0 when p
// is the start of a valid sequence that it does not hold to its end.
func textToken(p []byte) (size, units int, valid bool) {
	if p[0] < utf8.RuneSelf {
		return 1, 1, true
	}
	if !utf8.FullRune(p) { // an invalid prefix counts as full: it decodes to one error byte
		return 0, 0, false
	}
	r, n := utf8.DecodeRune(p)
	switch {
	case r == utf8.RuneError && n == 1:
		return 1, 1, false
	case n == utf8.UTFMax:
		return n, 2, true
	}
	return n, 1, true
}

func emitToken(dst, tok []byte, valid bool) []byte {
	if valid {
		return append(dst, tok...)
	}
	return append(dst, replacement...)
}

// asciiRun returns the length of the run of ASCII bytes p starts with, eight bytes at
// a time while it can.
func asciiRun(p []byte) int {
	const high = 0x8080808080808080
	i := 0
	for ; i+32 <= len(p); i += 32 {
		w := binary.LittleEndian.Uint64(p[i:]) | binary.LittleEndian.Uint64(p[i+8:]) |
			binary.LittleEndian.Uint64(p[i+16:]) | binary.LittleEndian.Uint64(p[i+24:])
		if w&high != 0 {
			break
		}
	}
	for ; i+8 <= len(p); i += 8 {
		if binary.LittleEndian.Uint64(p[i:])&high != 0 {
			break
		}
	}
	for i < len(p) && p[i] < utf8.RuneSelf {
		i++
	}
	return i
}
