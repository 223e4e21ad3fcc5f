package frame

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrIncomplete is returned by [Parse] when the buffer does not hold a whole frame yet.
var ErrIncomplete = errors.New("frame: incomplete")

// ErrMalformed is returned by [Parse] when the frame for the nonce is present but
// broken, and by [ParseExports] for a line it cannot read.
var ErrMalformed = errors.New("frame: malformed")

// Frame is one parsed control frame.
type Frame struct {
	// Status is the command's exit status.
	Status int
	// Cwd is the shell's working directory after the command, "" if pwd failed.
	Cwd string
	// Env holds the exported variables after the command.
	Env map[string]string
}

// Prefix is what every frame header starts with, before the nonce.
const Prefix = "\nsandgate:"

// Parse looks for the frame of nonce in buf. It returns the frame and the index just
// past it; bytes of buf before the frame are junk that the caller may drop. With no
// complete frame it returns [ErrIncomplete]; a frame with the right nonce that cannot be
// read returns an error wrapping [ErrMalformed].
func Parse(buf []byte, nonce string) (Frame, int, error) {
	if nonce == "" {
		return Frame{}, 0, fmt.Errorf("%w: empty nonce", ErrMalformed)
	}
	head := []byte(Prefix + nonce + " ")
	start := bytes.Index(buf, head)
	if start < 0 {
		return Frame{}, 0, ErrIncomplete
	}
	rest := buf[start+len(head):]
	tail := []byte(Tail(nonce))
	end := bytes.Index(rest, tail)
	if end < 0 {
		return Frame{}, 0, ErrIncomplete
	}
	body := rest[:end]
	consumed := start + len(head) + end + len(tail)

	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return Frame{}, 0, fmt.Errorf("%w: no status line", ErrMalformed)
	}
	status, err := parseStatus(body[:nl])
	if err != nil {
		return Frame{}, 0, err
	}
	body = body[nl+1:]
	nul := bytes.IndexByte(body, 0)
	if nul < 0 {
		return Frame{}, 0, fmt.Errorf("%w: no cwd terminator", ErrMalformed)
	}
	cwd := string(bytes.TrimSuffix(body[:nul], []byte("\n")))
	env, err := ParseExports(body[nul+1:])
	if err != nil {
		return Frame{}, 0, err
	}
	return Frame{Status: status, Cwd: cwd, Env: env}, consumed, nil
}

func parseStatus(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 3 {
		return 0, fmt.Errorf("%w: bad status %q", ErrMalformed, b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad status %q", ErrMalformed, b)
		}
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n > 255 {
		return 0, fmt.Errorf("%w: bad status %q", ErrMalformed, b)
	}
	return n, nil
}

// ParseHead reads the start of the frame of nonce in buf: the status and the cwd, which
// come before the `export -p` listing. It returns them and the index just past the
// cwd's terminator, where the listing starts; a caller that cannot hold a whole frame
// drops the listing from there up to [Tail]. With no header yet, or a header whose
// cwd is not complete, it returns [ErrIncomplete].
func ParseHead(buf []byte, nonce string) (status int, cwd string, n int, err error) {
	if nonce == "" {
		return 0, "", 0, fmt.Errorf("%w: empty nonce", ErrMalformed)
	}
	head := []byte(Prefix + nonce + " ")
	start := bytes.Index(buf, head)
	if start < 0 {
		return 0, "", 0, ErrIncomplete
	}
	body := buf[start+len(head):]
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return 0, "", 0, ErrIncomplete
	}
	if status, err = parseStatus(body[:nl]); err != nil {
		return 0, "", 0, err
	}
	nul := bytes.IndexByte(body[nl+1:], 0)
	if nul < 0 {
		return 0, "", 0, ErrIncomplete
	}
	cwd = string(bytes.TrimSuffix(body[nl+1:nl+1+nul], []byte("\n")))
	return status, cwd, start + len(head) + nl + 1 + nul + 1, nil
}

// Tail returns the line that ends the frame of nonce.
func Tail(nonce string) string { return Prefix + nonce + ":end\n" }
