package gateway

import (
	"strconv"
	"unicode/utf8"
)

// decodeExecFast decodes the plainest exec bodies into a zero req without
// encoding/json, and reports whether it did; on false req is untouched and the caller
// decodes with decodeStrict, whose errors and answers stay the contract's.
//
// It takes only what it can decode exactly as decodeStrict does: an object whose keys
// are the request's own names, each once, spelt as they are; strings without escapes,
// control characters or invalid UTF-8 (which encoding/json would rewrite); an argv of
// such strings; an env object of them, each key once; a timeout_ms of an integer
// literal that fits. Anything else, null included, is left to decodeStrict. Every exec
// request is decoded, and encoding/json with the strict key walk after it took ~5 µs of
// an exec's server CPU for `{"argv":["true"]}` (BENCHMARKS.md, "#14, sixth pass");
// FuzzDecodeExecFast holds the two to the same result.
func decodeExecFast(body []byte, req *execRequest) bool {
	p := fastJSON{data: body}
	var out execRequest
	var seen [6]bool // argv, command, cwd, env, timeout_ms, stdin
	if !p.byte('{') {
		return false
	}
	if !p.byte('}') {
		for {
			key, ok := p.str()
			if !ok || !p.byte(':') {
				return false
			}
			k := execKey(key)
			if k < 0 || seen[k] {
				return false
			}
			seen[k] = true
			switch k {
			case 0:
				if out.Argv, ok = p.strs(); !ok {
					return false
				}
			case 1, 2, 5:
				s, ok := p.str()
				if !ok {
					return false
				}
				switch k {
				case 1:
					out.Command = &s
				case 2:
					out.Cwd = s
				case 5:
					out.Stdin = &s
				}
			case 3:
				if out.Env, ok = p.env(); !ok {
					return false
				}
			case 4:
				n, ok := p.int()
				if !ok {
					return false
				}
				out.TimeoutMs = &n
			}
			if p.byte('}') {
				break
			}
			if !p.byte(',') {
				return false
			}
		}
	}
	p.space()
	if p.i != len(p.data) {
		return false
	}
	*req = out
	return true
}

// execKey is the index of an exec request's key, or -1.
func execKey(k string) int {
	switch k {
	case "argv":
		return 0
	case "command":
		return 1
	case "cwd":
		return 2
	case "env":
		return 3
	case "timeout_ms":
		return 4
	case "stdin":
		return 5
	}
	return -1
}

// fastJSON is decodeExecFast's position in its body.
type fastJSON struct {
	data []byte
	i    int
}

// space skips JSON whitespace.
func (p *fastJSON) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after whitespace, if it is next.
func (p *fastJSON) byte(c byte) bool {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str consumes a string without escapes or control characters, of valid UTF-8.
func (p *fastJSON) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.data); p.i++ {
		switch c := p.data[p.i]; {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			return string(s), utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// strs consumes an array of such strings; [] is an empty, non-nil slice, as
// encoding/json makes it.
func (p *fastJSON) strs() ([]string, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := []string{}
	if p.byte(']') {
		return out, true
	}
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// env consumes an object of such strings, each key once; {} is an empty map.
func (p *fastJSON) env() (map[string]string, bool) {
	if !p.byte('{') {
		return nil, false
	}
	out := map[string]string{}
	if p.byte('}') {
		return out, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.byte(':') {
			return nil, false
		}
		v, ok := p.str()
		if _, dup := out[k]; !ok || dup {
			return nil, false
		}
		out[k] = v
		if p.byte('}') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// int consumes a JSON integer literal (no fraction or exponent) that fits an int64.
func (p *fastJSON) int() (int64, bool) {
	p.space()
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		p.i++
	}
	switch {
	case p.i == digits, p.data[digits] == '0' && p.i > digits+1: // no digit; a leading zero
		return 0, false
	case p.i < len(p.data) && (p.data[p.i] == '.' || p.data[p.i] == 'e' || p.data[p.i] == 'E'):
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
	return n, err == nil
}
