package actor

import "time"

// Clock is the source of time for alarms, idle and passivation decisions. Tests pass a
// fake (actortest.Clock) so alarms fire without sleeping. Implementations must be safe
// for concurrent use; AfterFunc runs f on a goroutine of the clock's choosing, and f must
// not block.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Stopper
}

// Stopper cancels a pending AfterFunc. Stop reports whether it stopped the call before it
// ran; it is safe to call more than once. It is an alias of an unnamed interface so a
// fake clock (actortest.Clock) can satisfy Clock without importing this package.
type Stopper = interface {
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }
