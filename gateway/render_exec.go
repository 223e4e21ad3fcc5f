package gateway

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runtime"
)

// writeExec writes an exec's result as writeJSON(w, 200, renderExec(r)) would, byte for
// byte (TestAppendExec, FuzzAppendExec), without encoding/json's reflection and the
// output's copies into strings for the common result (UTF-8 output, so no base64
// fields): json.Marshal of it took ~4 µs of an exec's server CPU (BENCHMARKS.md, "#14,
// sixth pass").
func writeExec(w http.ResponseWriter, r runtime.ExecResult) {
	if !utf8.Valid(r.Stdout) || !utf8.Valid(r.Stderr) {
		writeJSON(w, http.StatusOK, renderExec(r))
		return
	}
	b := appendExec(make([]byte, 0, 128+len(r.Stdout)+len(r.Stderr)), r)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// appendExec appends json.Marshal(renderExec(r)) and a newline, for r whose output is
// valid UTF-8 (renderExec adds no base64 fields then).
func appendExec(b []byte, r runtime.ExecResult) []byte {
	b = append(b, `{"exit_code":`...)
	b = strconv.AppendInt(b, int64(r.ExitCode), 10)
	b = append(b, `,"stdout":`...)
	b = appendJSONString(b, r.Stdout)
	b = append(b, `,"stderr":`...)
	b = appendJSONString(b, r.Stderr)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, ms(r.Duration), 10)
	b = append(b, `,"timed_out":`...)
	b = strconv.AppendBool(b, r.TimedOut)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, r.Truncated)
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string exactly as encoding/json writes it (with
// its HTML escaping): \", \\, \b, \f, \n, \r and \t; \u00XX for the other control
// characters and for <, > and &; \u2028 and \u2029; \ufffd for each byte of invalid
// UTF-8.
func appendJSONString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
