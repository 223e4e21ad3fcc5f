package actor

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// validID reports whether id is a valid caller-chosen or server-made id: 1-63 chars of
// [a-z0-9_-], starting with a letter or digit (API.md, Conventions).
func validID(id string) bool {
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

func checkID(what, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: bad %s id %q", ErrInvalid, what, id)
	}
	return nil
}

// newID returns prefix + 16 random hex digits, e.g. "sb_9f2c4e1a0b3d5f67".
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
