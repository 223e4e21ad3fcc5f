package actor

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/sandgate/sandgate/runtime"
)

func checkID(what, id string) error {
	if !runtime.ValidID(id) {
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
