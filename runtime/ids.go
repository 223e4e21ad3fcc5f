package runtime

import (
	"crypto/rand"
	"encoding/hex"
)

// newProcessID returns "proc_" followed by 16 hex digits from crypto/rand.
func newProcessID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (getrandom).
	var out [5 + 16]byte
	copy(out[:], "proc_")
	hex.Encode(out[5:], b[:])
	return string(out[:])
}

// ValidID reports whether id is 1-63 chars of [a-z0-9_-] starting with a letter or
// digit: the syntax of every sandbox, process, session and terminal id of the public
// API, caller-chosen or server-made (sb_…, proc_…, sess_…).
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 63 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
