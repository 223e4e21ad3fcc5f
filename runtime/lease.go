package runtime

import (
	"math"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/nsinit"
)

// Lease is a deadline that every sandbox of a NamespaceDriver with this Lease holds in
// its own init (see the package doc, Fencing): when it passes without an Extend, each
// sandbox's processes are frozen (or, without a cgroup2 freezer, killed) by the init
// itself, even if the server is stopped and cannot act; an Extend that brings the
// deadline back into the future thaws them. While the deadline is past, starting a
// process fails with ErrLeaseExpired. A cluster node extends it each time it renews
// its node lease.
//
// A Lease starts expired: a sandbox made before the first Extend runs nothing until
// then. The zero value is such a Lease, ready to use. Its methods are safe for
// concurrent use, and Extend never waits for an init.
type Lease struct {
	mu    sync.Mutex
	until int64                     // the deadline, in ns of CLOCK_BOOTTIME (nsinit.Now); 0: expired
	inits map[*nsinit.Init]struct{} // the inits holding it, told every extension
}

// NewLease returns a Lease that has expired; Extend starts it.
func NewLease() *Lease { return &Lease{} }

// Extend moves the deadline to until if that is later than the current one (an
// earlier until is ignored: a lease only grows), and pushes it to the init of every
// sandbox holding the lease. It costs one small frame per sandbox, sent in the
// background: a slow or dead init never blocks it, and extensions made while one is on
// its way coalesce.
//
// until is turned into the host's CLOCK_BOOTTIME, the clock the inits hold it on,
// through time.Until, which uses the monotonic reading of a time.Time from time.Now
// (as the cluster's lease is). The boot clock is read first, so the deadline the
// inits hold is never later than until.
func (l *Lease) Extend(until time.Time) {
	boot := nsinit.Now()
	rem := time.Until(until)
	d := boot + int64(rem)
	if rem > 0 && d < boot { // past the clock's range: forever
		d = math.MaxInt64
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d <= l.until {
		return
	}
	l.until = d
	for in := range l.inits {
		in.Renew(d)
	}
}

// Valid reports whether the deadline is still ahead.
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return nsinit.Now() < l.until
}

// deadline returns the deadline in ns of CLOCK_BOOTTIME, for an init about to start.
func (l *Lease) deadline() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// attach makes in, started with deadline(), hear every later extension, and tells it
// one made since it started.
func (l *Lease) attach(in *nsinit.Init) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inits == nil {
		l.inits = map[*nsinit.Init]struct{}{}
	}
	l.inits[in] = struct{}{}
	in.Renew(l.until) // a no-op unless Extend ran between deadline and now
}

// detach forgets in, whose sandbox is closing.
func (l *Lease) detach(in *nsinit.Init) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inits, in)
}

// leaseExpired reports whether the sandbox's driver has a Lease that has run out.
func (s *Sandbox) leaseExpired() bool {
	d, ok := s.cfg.Driver.(NamespaceDriver)
	return ok && d.Lease != nil && !d.Lease.Valid()
}
