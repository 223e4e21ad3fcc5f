package frame

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// unquoteANSI decodes bash's $'…' quoting, the subset of escapes that bash's ansic_quote
// writes plus the rest that $'…' accepts, so values round-trip byte for byte.
func unquoteANSI(s string) (string, error) {
	var out strings.Builder
	for i := 2; i < len(s); i++ {
		c := s[i]
		if c == '\'' {
			if i != len(s)-1 {
				return "", fmt.Errorf("%w: trailing bytes after %q", ErrMalformed, s[:i+1])
			}
			return out.String(), nil
		}
		if c != '\\' {
			out.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		e := s[i]
		if b, ok := simpleEscape(e); ok {
			out.WriteByte(b)
			continue
		}
		switch {
		case e >= '0' && e <= '7':
			v, n := digits(s[i:], 3, 8)
			out.WriteByte(byte(v))
			i += n - 1
		case e == 'x':
			v, n := digits(s[i+1:], 2, 16)
			if n == 0 {
				out.WriteString(`\x`)
				continue
			}
			out.WriteByte(byte(v))
			i += n
		case e == 'u' || e == 'U':
			width := 4
			if e == 'U' {
				width = 8
			}
			v, n := digits(s[i+1:], width, 16)
			if n == 0 {
				out.WriteByte('\\')
				out.WriteByte(e)
				continue
			}
			if v > utf8.MaxRune {
				v = utf8.RuneError
			}
			out.WriteRune(rune(v))
			i += n
		case e == 'c':
			if i+1 >= len(s) {
				return "", fmt.Errorf("%w: dangling \\c in %q", ErrMalformed, s)
			}
			i++
			out.WriteByte(s[i] & 0x1f)
		default:
			out.WriteByte('\\')
			out.WriteByte(e)
		}
	}
	return "", fmt.Errorf("%w: unterminated %q", ErrMalformed, s)
}

func simpleEscape(e byte) (byte, bool) {
	switch e {
	case 'a':
		return 7, true
	case 'b':
		return 8, true
	case 'e', 'E':
		return 27, true
	case 'f':
		return 12, true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'v':
		return 11, true
	case '\\', '\'', '"', '?':
		return e, true
	}
	return 0, false
}

// digits reads up to max digits of base from s and returns the value and how many it read.
func digits(s string, max, base int) (uint32, int) {
	var v uint32
	n := 0
	for n < max && n < len(s) {
		d := digitVal(s[n])
		if d < 0 || d >= base {
			break
		}
		v = v*uint32(base) + uint32(d)
		n++
	}
	return v, n
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
