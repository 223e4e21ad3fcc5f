package nsinit

import "errors"

var (
	// ErrUnsupported is returned by Start where the init cannot run (not Linux).
	ErrUnsupported = errors.New("nsinit: namespaces are not supported on this system")
	// ErrClosed is returned by calls on an Init that was closed, and by Wait for a child
	// whose exit the init had not reported when it was closed.
	ErrClosed = errors.New("nsinit: init closed")
	// ErrInitExited is returned when the init process ended without being closed.
	ErrInitExited = errors.New("nsinit: init exited")
	// ErrExited is returned by Signal for a child whose exit was already reported.
	ErrExited = errors.New("nsinit: process exited")
	// ErrInvalidConfig is returned by Start for a Config that cannot work.
	ErrInvalidConfig = errors.New("nsinit: invalid config")
	// ErrInvalidRequest is returned by Spawn for a SpawnRequest that cannot work.
	ErrInvalidRequest = errors.New("nsinit: invalid spawn request")
	// ErrFrameTooLarge is returned when a request (argv and env together) is too large
	// even for a spilled frame (4 MiB; spill_linux.go).
	ErrFrameTooLarge = errors.New("nsinit: request too large")
	// ErrNoUserNS is returned by UserNSSupported when a sandbox cannot have its own
	// user namespace here; the message says why.
	ErrNoUserNS = errors.New("nsinit: user namespaces are not available")
	// ErrLeaseExpired is returned by Spawn when the init's lease (Config.Lease) has run
	// out: the sandbox is fenced until Renew gives it a deadline in the future.
	ErrLeaseExpired = errors.New("nsinit: lease expired")
	// ErrNotStarted is wrapped, with the cause, in the error Child.Wait returns for a
	// SpawnRequest.NoWait process that could not be started.
	ErrNotStarted = errors.New("nsinit: process not started")
	// ErrProtocol is returned when the other end sent a frame that breaks the protocol.
	ErrProtocol = errors.New("nsinit: protocol error")

	// errCloneInto is wrapped by the own spawn path when the kernel refused to clone
	// into the cgroup (the init may not write it): no child was made.
	errCloneInto = errors.New("nsinit: clone into the cgroup refused")
)
