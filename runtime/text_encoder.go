package runtime

import (
	"encoding/binary"
	"math/bits"
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
	held   [utf8.UTFMax - 1]byte // a valid, incomplete sequence
	n      int                   // bytes in held
	bad    int64                 // bytes decoded as U+FFFD so far
	noBulk bool                  // decode with the table loop alone (tests compare the two)
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
			if !valid {
				s.bad++
			}
			if emit {
				dst = emitToken(dst, c[i:i+size], valid)
			}
			i += size
		}
		p = p[i-s.n:]
		s.n = 0
	}
	return s.scan(dst, p, units, emit)
}

// scan is feed once nothing is held. Where it can, bulkText proves and counts whole
// blocks; elsewhere runs of ASCII go eight bytes at a time and each other sequence is
// decided by table. Valid bytes are copied to dst in bulk; only an invalid byte
// breaks a run.
func (s *textState) scan(dst, p []byte, units int64, emit bool) ([]byte, int64) {
	const high = 0x8080808080808080
	i, copied, n := 0, 0, len(p)
	next := 0 // where bulkText is tried next
	if s.noBulk {
		next = n
	}
	for i < n {
		if i >= next {
			k, u, checked := bulkText(p[i:])
			next = i + checked
			i += k
			units += u
			if i == n {
				break
			}
		}
		if i+8 <= n {
			w := binary.LittleEndian.Uint64(p[i:]) & high
			if w == 0 {
				i += 8
				units += 8
				// A long ASCII run: 32 bytes at a time (tried only after 8 ASCII
				// bytes, so that text with a character that is not every few
				// bytes does not pay for it).
				for i+32 <= n {
					q := p[i : i+32]
					w := binary.LittleEndian.Uint64(q) | binary.LittleEndian.Uint64(q[8:]) |
						binary.LittleEndian.Uint64(q[16:]) | binary.LittleEndian.Uint64(q[24:])
					if w&high != 0 {
						break
					}
					i += 32
					units += 32
				}
				continue
			}
			k := bits.TrailingZeros64(w) >> 3 // ASCII bytes before the first that is not
			i += k
			units += int64(k)
		} else if p[i] < utf8.RuneSelf {
			i++
			units++
			continue
		}
		// A complete, valid sequence, decided here: the common case, without a call.
		if x := leads[p[i]]; x != 0 {
			size := int(x & 7)
			if i+size <= n {
				a := &accepts[x>>4]
				c1 := p[i+1]
				if c1 >= a[0] && c1 <= a[1] && (size < 3 || p[i+2]&0xC0 == 0x80) && (size < 4 || p[i+3]&0xC0 == 0x80) {
					i += size
					units += int64(1 + size>>2)
					continue
				}
			}
		}
		size, u, valid := textToken(p[i:])
		switch {
		case size == 0:
			s.n = copy(s.held[:], p[i:])
			if emit {
				dst = append(dst, p[copied:i]...)
			}
			return dst, units
		case !valid:
			s.bad++
			if emit {
				dst = append(dst, p[copied:i]...)
				dst = append(dst, replacement...)
				copied = i + 1
			}
		}
		i += size
		units += int64(u)
	}
	if emit {
		dst = append(dst, p[copied:]...)
	}
	return dst, units
}

// flush ends the stream: each held byte is one U+FFFD.
func (s *textState) flush(dst []byte, emit bool) ([]byte, int64) {
	n := s.n
	s.n = 0
	s.bad += int64(n)
	if emit {
		for range n {
			dst = append(dst, replacement...)
		}
	}
	return dst, int64(n)
}

// textToken decodes the token at the start of p (not empty): a valid sequence of size
// bytes, or (valid false) one invalid byte, with its UTF-16 units. size is 0 when p
// is the start of a valid sequence that it does not hold to its end. It is
// utf8.DecodeRune's rule (an invalid byte decodes alone), with its tables, written out
// so that the hot loop pays no call into utf8 for a valid sequence.
func textToken(p []byte) (size, units int, valid bool) {
	c := p[0]
	if c < utf8.RuneSelf {
		return 1, 1, true
	}
	x := leads[c]
	if x == 0 {
		return 1, 1, false
	}
	want := int(x & 7)
	lo, hi := accepts[x>>4][0], accepts[x>>4][1]
	for k := 1; k < want; k++ {
		if k >= len(p) {
			return 0, 0, false // a valid prefix so far: wait for the rest
		}
		if c := p[k]; c < lo || c > hi {
			return 1, 1, false
		}
		lo, hi = 0x80, 0xBF
	}
	return want, 1 + want>>2, true
}

// leads describes each byte as the first of a sequence: 0 for ASCII and bytes that
// cannot start one, else its length (low 3 bits) and the index in accepts of the
// range its second byte must fall in (high bits), as unicode/utf8 has it.
var leads = func() (t [256]uint8) {
	for c := 0xC2; c <= 0xDF; c++ {
		t[c] = 2
	}
	for c := 0xE0; c <= 0xEF; c++ {
		t[c] = 3
	}
	t[0xE0] |= 1 << 4 // no overlong form
	t[0xED] |= 2 << 4 // no surrogate
	for c := 0xF0; c <= 0xF4; c++ {
		t[c] = 4
	}
	t[0xF0] |= 3 << 4 // no overlong form
	t[0xF4] |= 4 << 4 // nothing above U+10FFFF
	return t
}()

var accepts = [5][2]byte{{0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0x9F}, {0x90, 0xBF}, {0x80, 0x8F}}

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
