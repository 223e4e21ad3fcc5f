package runtime

import "errors"

// Errors returned by the process side of the runtime. Compare with errors.Is: most are
// wrapped with detail.
var (
	// ErrNotFound is returned for an unknown process id.
	ErrNotFound = errors.New("runtime: process not found")
	// ErrExited is returned when a signal or input is sent to a process that has exited.
	ErrExited = errors.New("runtime: process already exited")
	// ErrInputBlocked is returned by Process.Write and WriteContext when the process
	// did not take its input before the deadline (it is not reading it, or its terminal
	// output is stopped); part of it may have been written.
	ErrInputBlocked = errors.New("runtime: process is not reading its input")
	// ErrStdinClosed is returned by Process.Write after Process.CloseStdin.
	ErrStdinClosed = errors.New("runtime: stdin closed")
	// ErrNotPTY is returned by Process.Resize on a process without a PTY.
	ErrNotPTY = errors.New("runtime: process has no pty")
	// ErrTooManyProcesses is returned by Sandbox.Start and Sandbox.StartTerminal when
	// Config.MaxProcesses processes are already running.
	ErrTooManyProcesses = errors.New("runtime: too many processes")
	// ErrBadSignal is returned by ParseSignal for an unknown signal name or number.
	ErrBadSignal = errors.New("runtime: bad signal")
	// ErrClosed is returned by every Sandbox method after Sandbox.Close.
	ErrClosed = errors.New("runtime: sandbox closed")
	// ErrInvalid is returned for bad options: both or neither of Command and Argv, a cwd
	// outside the workspace, a bad id.
	ErrInvalid = errors.New("runtime: invalid options")
	// ErrLeaseExpired is returned by Exec, Start, StartTerminal and session starts on
	// a sandbox whose NamespaceDriver.Lease has run out: its processes are frozen and
	// it starts nothing until Lease.Extend renews it.
	ErrLeaseExpired = errors.New("runtime: node lease expired")
	// ErrDuplicateID is returned by Sandbox.Start when StartOptions.ID names a process
	// that is still listed.
	ErrDuplicateID = errors.New("runtime: process id already in use")
)

// ErrNoCgroups is returned by Sandbox.Usage and Sandbox.SetLimits, and by New for a
// Config with limits, when the sandbox runs without the cgroups they need (see
// Containment).
var ErrNoCgroups = errors.New("runtime: no cgroups for this sandbox")

// Errors of a PTY process's text positions (Process.TextStart, TextEnd, TextSeek).
var (
	// ErrTextGone is returned by Process.TextSeek for a unit count older than what
	// the ring retains; the oldest position a text reader can start at is returned
	// with it.
	ErrTextGone = errors.New("runtime: text position no longer retained")
	// ErrNoText is returned by the text position methods of a process without a PTY:
	// no text index is kept for pipes.
	ErrNoText = errors.New("runtime: process has no pty, so no text index")
)
