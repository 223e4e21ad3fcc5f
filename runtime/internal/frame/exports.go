package frame

import (
	"bytes"
	"fmt"
	"strings"
)

// ParseExports reads the output of bash's `export -p` (in normal or POSIX mode) and
// returns the exported variables that have a value. Each line is `declare -FLAGS NAME`,
// optionally followed by `=VALUE`, where VALUE is "double quoted" (with \" \\ \$ \`
// escaped) or $'ANSI-C quoted'. POSIX mode writes `export` instead of `declare -x`.
func ParseExports(b []byte) (map[string]string, error) {
	env := map[string]string{}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 {
			continue
		}
		name, value, ok, err := parseExportLine(string(line))
		if err != nil {
			return nil, err
		}
		if ok {
			env[name] = value
		}
	}
	return env, nil
}

// parseExportLine returns ok=false for lines that name no plain valued variable.
func parseExportLine(line string) (name, value string, ok bool, err error) {
	flags := ""
	switch {
	case strings.HasPrefix(line, "declare -"):
		rest := line[len("declare -"):]
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			return "", "", false, fmt.Errorf("%w: %q", ErrMalformed, line)
		}
		flags, line = rest[:sp], rest[sp+1:]
	case strings.HasPrefix(line, "export "):
		line = line[len("export "):]
		if strings.HasPrefix(line, "-") {
			sp := strings.IndexByte(line, ' ')
			if sp < 0 {
				return "", "", false, fmt.Errorf("%w: %q", ErrMalformed, line)
			}
			flags, line = line[1:sp], line[sp+1:]
		}
	default:
		return "", "", false, fmt.Errorf("%w: %q", ErrMalformed, line)
	}
	eq := strings.IndexByte(line, '=')
	name = line
	if eq >= 0 {
		name = line[:eq]
	}
	if !ValidName(name) {
		return "", "", false, fmt.Errorf("%w: bad name in %q", ErrMalformed, line)
	}
	if strings.ContainsAny(flags, "aAn") || eq < 0 {
		return name, "", false, nil
	}
	value, err = unquote(line[eq+1:])
	if err != nil {
		return "", "", false, err
	}
	return name, value, true, nil
}

// ValidName reports whether s is a shell variable name: [A-Za-z_][A-Za-z0-9_]*.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func unquote(s string) (string, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		return unquoteDouble(s)
	case strings.HasPrefix(s, `$'`):
		return unquoteANSI(s)
	}
	return "", fmt.Errorf("%w: unquoted value %q", ErrMalformed, s)
}

func unquoteDouble(s string) (string, error) {
	var out strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			if i != len(s)-1 {
				return "", fmt.Errorf("%w: trailing bytes after %q", ErrMalformed, s[:i+1])
			}
			return out.String(), nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
				i++
				out.WriteByte(s[i])
				continue
			}
		}
		out.WriteByte(c)
	}
	return "", fmt.Errorf("%w: unterminated %q", ErrMalformed, s)
}
