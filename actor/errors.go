package actor

import (
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Sentinel errors of package actor. Match them with errors.Is; the gateway maps each to
// one API error code in one place.
var (
	// ErrNotFound means the sandbox or a thing inside it (session, terminal, process)
	// does not exist. Errors returned for it are usually a *NotFoundError.
	ErrNotFound = errors.New("actor: not found")
	// ErrConflict means an id exists with different settings, or a session is dead.
	ErrConflict = errors.New("actor: conflict")
	// ErrExpired means the sandbox passed its max duration and accepts no new work.
	ErrExpired = errors.New("actor: sandbox expired")
	// ErrBudgetExceeded means a budget (max processes, ...) would be exceeded. Errors
	// returned for it are a *BudgetError.
	ErrBudgetExceeded = errors.New("actor: budget exceeded")
	// ErrMailboxFull means the sandbox's bounded mailbox is full; retry later.
	ErrMailboxFull = errors.New("actor: mailbox full")
	// ErrTooLarge means an event or message is over its size limit.
	ErrTooLarge = errors.New("actor: too large")
	// ErrInvalid means a malformed argument (bad id, bad event type, ...).
	ErrInvalid = errors.New("actor: invalid argument")
	// ErrUnavailable means the node cannot serve the sandbox now: admission refused,
	// the write was fenced, or the node is closing.
	ErrUnavailable = errors.New("actor: unavailable")
	// ErrFenced is returned by a Storage when a write carries an epoch older than the
	// one it has recorded for the sandbox: another owner has taken over. The actor
	// wraps it in ErrUnavailable and drops its activation.
	ErrFenced = errors.New("actor: write fenced by a newer owner epoch")
	// ErrIndeterminate is returned by a Storage whose Write cannot tell whether the
	// batch was applied (a cluster leader lost while committing it, a ctx that ended
	// while it was queued). The store settles the outcome before its next Read of
	// that sandbox answers. The actor treats it as any failed commit: it answers
	// ErrUnavailable and drops the activation (unsettled.go).
	ErrIndeterminate = errors.New("actor: write outcome unknown")
	// ErrClosed is returned by a Storage used after Close.
	ErrClosed = errors.New("actor: storage closed")
	// ErrCorrupt means a sandbox's stored records could not be read: the storage file
	// is damaged where they are. That sandbox fails until the file is repaired and the
	// node restarted; other sandboxes are unaffected. Errors returned for it are a
	// *CorruptError, which also matches ErrUnavailable.
	ErrCorrupt = errors.New("actor: stored state could not be read")
)

// errPageFull ends a storage walk once a page of a list is read (list.go); it never
// leaves the package.
var errPageFull = errors.New("actor: list page full")

// NotFoundError says what was not found. It matches ErrNotFound with errors.Is.
type NotFoundError struct {
	What string // "sandbox", "session", "terminal", "process"
	ID   string
}

// Error returns e.g. `sandbox "x" not found`.
func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(what, id string) error { return &NotFoundError{What: what, ID: id} }

// DeadSessionError is a command for a session that has died. It matches ErrConflict
// and runtime.ErrSessionDead with errors.Is.
type DeadSessionError struct {
	ID     string
	Reason string // why it died, e.g. "command timed out"
}

// Error returns e.g. `session "s" is dead: command timed out`.
func (e *DeadSessionError) Error() string {
	return fmt.Sprintf("session %q is dead: %s", e.ID, e.Reason)
}

// Is reports whether target is ErrConflict or runtime.ErrSessionDead.
func (e *DeadSessionError) Is(target error) bool {
	return target == ErrConflict || target == runtime.ErrSessionDead
}

// ExitedError is Node.Process's answer for a process that exited in an earlier life of
// the sandbox's runtime (before hibernation, passivation, expiry or a node restart): its
// record is still kept, but there is no live handle, and its output is gone. It
// matches runtime.ErrExited with errors.Is. [ExitedProcess] returns the record.
type ExitedError struct {
	Sandbox string
	Info    runtime.ProcessInfo
}

// Error returns e.g. `process "proc_1" of sandbox "sb" already exited`.
func (e *ExitedError) Error() string {
	return fmt.Sprintf("process %q of sandbox %q already exited", e.Info.ID, e.Sandbox)
}

// Is reports whether target is runtime.ErrExited.
func (e *ExitedError) Is(target error) bool { return target == runtime.ErrExited }

// ExitedProcess returns the kept record of the exited process err is about, if err is
// or wraps an *ExitedError.
func ExitedProcess(err error) (runtime.ProcessInfo, bool) {
	var ee *ExitedError
	if errors.As(err, &ee) {
		return ee.Info, true
	}
	return runtime.ProcessInfo{}, false
}

// BudgetError says which budget was exceeded and, when it applies, when to retry. It
// matches ErrBudgetExceeded with errors.Is.
type BudgetError struct {
	Budget     string        // e.g. "max_processes"
	Limit      int           // the limit that applied
	RetryAfter time.Duration // 0 when retrying will not help by itself
}

// Error describes the exceeded budget.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("actor: budget exceeded: %s (limit %d)", e.Budget, e.Limit)
}

// Is reports whether target is ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// RetryAfter returns how long to wait before retrying err, or 0.
func RetryAfter(err error) time.Duration {
	var be *BudgetError
	if errors.As(err, &be) {
		return be.RetryAfter
	}
	return 0
}

// CorruptError says which sandbox's stored records could not be read, and why. It
// matches ErrCorrupt and ErrUnavailable with errors.Is.
type CorruptError struct {
	Sandbox string // "" for the index of sandboxes, which lists them
	Detail  string // what the store found, e.g. a page that is not what it should be
}

// Error returns e.g. `sandbox "x" is unavailable: its stored state could not be read
// (page 12 is damaged)`.
func (e *CorruptError) Error() string {
	if e.Sandbox == "" {
		return fmt.Sprintf("actor: the list of sandboxes is unavailable: its stored state could not be read (%s)", e.Detail)
	}
	return fmt.Sprintf("actor: sandbox %q is unavailable: its stored state could not be read (%s)", e.Sandbox, e.Detail)
}

// Is reports whether target is ErrCorrupt or ErrUnavailable.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt || target == ErrUnavailable }
