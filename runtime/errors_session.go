package runtime

import (
	"errors"
	"io/fs"
)

// Errors of sessions and workspace files (process errors are in errors.go).
var (
	// ErrSessionDead is returned by Session.Exec once the session's shell is gone: a
	// command timed out, the shell exited, or the session was closed. The returned
	// error wraps it and says why.
	ErrSessionDead = errors.New("runtime: session is dead")
	// ErrEnvTooLarge is matched by an *EnvLimitError: an environment past
	// MaxEnvVars, MaxEnvValueBytes or MaxEnvBytes. A session command whose exported
	// environment is past them is not an error: its ExecResult.SnapshotErr holds it.
	ErrEnvTooLarge = errors.New("runtime: environment too large")
	// ErrEscapes is returned for a workspace path that resolves outside the workspace.
	ErrEscapes = errors.New("runtime: path escapes the workspace")
	// ErrIsDir is returned when a file operation meets a directory.
	ErrIsDir = errors.New("runtime: is a directory")
	// ErrNotDir is returned when a directory operation meets something else.
	ErrNotDir = errors.New("runtime: not a directory")
	// ErrNotEmpty is returned by a non-recursive remove of a directory with entries.
	ErrNotEmpty = errors.New("runtime: directory not empty")
	// ErrExist is returned when a path to be created exists. It matches fs.ErrExist.
	ErrExist error = wsMarkedError{msg: "runtime: file exists", is: fs.ErrExist}
	// ErrFileNotFound is returned for a workspace path that does not exist. It matches
	// fs.ErrNotExist.
	ErrFileNotFound error = wsMarkedError{msg: "runtime: file not found", is: fs.ErrNotExist}
)

// wsMarkedError is a sentinel that also matches a standard fs error under errors.Is.
type wsMarkedError struct {
	msg string
	is  error
}

func (e wsMarkedError) Error() string        { return e.msg }
func (e wsMarkedError) Is(target error) bool { return target == e.is }
