package plugins

import (
	"errors"
	"fmt"
)

// Failure kinds of a plugin call. A [*CallError] matches one of them with errors.Is.
var (
	// ErrTimeout: the call ran past its deadline and the instance was killed.
	ErrTimeout = errors.New("plugins: call timed out")
	// ErrTrap: the guest trapped, exited or ran out of memory.
	ErrTrap = errors.New("plugins: guest trapped")
	// ErrGarbage: the guest answered bytes that do not decode, or reported an error.
	ErrGarbage = errors.New("plugins: guest answered garbage")
	// ErrBusy: no instance became free before the call's deadline.
	ErrBusy = errors.New("plugins: no free instance")
	// ErrBreakerOpen: the hook failed repeatedly and is not being called for a while.
	ErrBreakerOpen = errors.New("plugins: circuit breaker open")
	// ErrCanceled: the caller's context ended during the call.
	ErrCanceled = errors.New("plugins: call canceled")
)

// Errors of the host itself.
var (
	// ErrClosed is returned by calls made after [Host.Close].
	ErrClosed = errors.New("plugins: host closed")
	// ErrInvalidModule is matched by load errors of a module that does not follow
	// plugins/ABI.md (missing exports, wrong ABI version, failed init).
	ErrInvalidModule = errors.New("plugins: invalid module")
	// ErrInvalidConfig is matched by [New] errors caused by the [Config].
	ErrInvalidConfig = errors.New("plugins: invalid config")
)

// CallError is returned, beside the fallback answer, when a plugin call fails. Kind is
// one of ErrTimeout, ErrTrap, ErrGarbage, ErrBusy, ErrBreakerOpen, ErrCanceled or
// ErrClosed; errors.Is matches both Kind and the underlying error.
type CallError struct {
	Hook string // "route" or "budget"
	Kind error
	Err  error // underlying cause, may be nil
}

// Error implements error.
func (e *CallError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%v (%s)", e.Kind, e.Hook)
	}
	return fmt.Sprintf("%v (%s): %v", e.Kind, e.Hook, e.Err)
}

// Unwrap returns Kind and Err.
func (e *CallError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// InitError reports that a guest's sandgate_init refused its configuration.
type InitError struct {
	Message string // what the guest reported through the error host function
}

// Error implements error.
func (e *InitError) Error() string { return "plugins: guest init failed: " + e.Message }

// Is matches [ErrInvalidModule].
func (e *InitError) Is(target error) bool { return target == ErrInvalidModule }
