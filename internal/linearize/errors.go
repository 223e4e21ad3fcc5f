package linearize

import (
	"errors"
	"fmt"
)

var (
	// ErrNotLinearizable means an object's history has no linearization.
	ErrNotLinearizable = errors.New("linearize: history is not linearizable")
	// ErrCheckTimeout means the checker gave up on an object before deciding.
	ErrCheckTimeout = errors.New("linearize: check timed out")
	// ErrBadHistory means the history itself is malformed: an object given the inputs
	// of two models, or an operation returned with an output of the wrong type.
	ErrBadHistory = errors.New("linearize: malformed history")
)

// Error is the failed check of one object.
type Error struct {
	// Key is the object's key.
	Key string
	// Ops is how many operations of the object were checked.
	Ops int
	// Visualization is the path of porcupine's HTML rendering of the history, when
	// CheckOptions.VisualizeDir was set and writing it succeeded.
	Visualization string
	// Err is ErrNotLinearizable, ErrCheckTimeout or ErrBadHistory, possibly wrapped.
	Err error
}

// Error describes the failure.
func (e *Error) Error() string {
	s := fmt.Sprintf("object %q (%d operations): %v", e.Key, e.Ops, e.Err)
	if e.Visualization != "" {
		s += " (see " + e.Visualization + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
