package wire

import (
	"errors"
	"fmt"
)

// ErrMalformed is matched (with errors.Is) by every decoding error.
var ErrMalformed = errors.New("plugins: malformed message")

// DecodeError tells where and why a message failed to decode.
type DecodeError struct {
	// Offset is the byte offset at which decoding stopped.
	Offset int
	// Reason says what was wrong.
	Reason string
}

// Error implements error.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("plugins: malformed message at byte %d: %s", e.Offset, e.Reason)
}

// Is reports whether target is [ErrMalformed].
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }
