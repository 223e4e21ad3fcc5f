//go:build !linux

package nsinit

import (
	"context"
	"os"
	"syscall"
	"time"
)

// IsInit reports whether this process was started by Start to be a sandbox's init;
// never, where Start is unsupported.
func IsInit() bool { return false }

// Main exits: there is no init outside Linux.
func Main() { os.Exit(1) }

// Init is a running sandbox init; Start never returns one outside Linux.
type Init struct{}

// Start returns ErrUnsupported outside Linux.
func Start(ctx context.Context, cfg Config) (*Init, error) { return nil, ErrUnsupported }

// PID returns 0.
func (in *Init) PID() int { return 0 }

// SpawnPath returns SpawnFork.
func (in *Init) SpawnPath() SpawnPath { return SpawnFork }

// Renew does nothing.
func (in *Init) Renew(until int64) {}

// clockBase anchors Now outside Linux, where no init shares the clock.
var clockBase = time.Now()

// Now returns the lease clock: outside Linux, the monotonic time since the process
// started, in nanoseconds (no init reads it).
func Now() int64 { return int64(time.Since(clockBase)) }

// Spawn returns ErrUnsupported.
func (in *Init) Spawn(ctx context.Context, req SpawnRequest) (*Child, error) {
	return nil, ErrUnsupported
}

// Done returns a closed channel.
func (in *Init) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Err returns ErrUnsupported.
func (in *Init) Err() error { return ErrUnsupported }

// Close does nothing.
func (in *Init) Close() error { return nil }

// Child is a process spawned by an Init; there are none outside Linux.
type Child struct{}

// PID returns 0.
func (ch *Child) PID() int { return 0 }

// HostPID returns 0.
func (ch *Child) HostPID() int { return 0 }

// Done returns a closed channel.
func (ch *Child) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Wait returns ErrUnsupported.
func (ch *Child) Wait(ctx context.Context) (ExitStatus, error) { return ExitStatus{}, ErrUnsupported }

// Signal returns ErrUnsupported.
func (ch *Child) Signal(ctx context.Context, sig syscall.Signal) error { return ErrUnsupported }

// UserNSSupported returns ErrUnsupported: there are no namespaces outside Linux.
func UserNSSupported(ctx context.Context, workspaceDir string) error { return ErrUnsupported }
