package nsinit

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Now returns the lease clock: CLOCK_BOOTTIME, in nanoseconds. It is one clock for
// every process of the host (the server and each init read the same value), it never
// jumps with the wall clock, and unlike CLOCK_MONOTONIC it keeps counting while the
// machine is suspended: a host that slept through its lease finds it over on waking,
// as the rest of the cluster saw it, rather than running on for the time it slept.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("nsinit: CLOCK_BOOTTIME unreadable: " + err.Error()) // Linux has had it since 2.6.39
	}
	return ts.Nano()
}

// initLease is the lease as the init holds it. A timerfd on CLOCK_BOOTTIME is armed at
// the deadline, so the init acts when the deadline passes even if the server is
// stopped, and on waking from a suspend at once; one goroutine waits on it.
//
// mu is held while the deadline, the fenced state and the freeze group change, and by
// a spawn from its check of the deadline until its fork returned: the spawner enters
// the spawn's group, under the freeze group, for the fork, and the init must never be
// in a group it freezes (it would stop hearing renewals). Nothing holds initProc.mu
// with it.
type initLease struct {
	id     string
	freeze int      // the freeze group's cgroup.freeze, or -1: kill instead
	timer  *os.File // the timerfd, non-blocking, on Go's poller

	mu     sync.Mutex
	until  int64 // the deadline, CLOCK_BOOTTIME ns
	fenced bool  // the deadline passed and no renewal since: spawns are refused
	frozen bool  // fenced by freezing (else by killing)
}

// newInitLease arms the lease at until and starts its watcher. freeze may be -1.
func newInitLease(id string, freeze int, until int64) (*initLease, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("failed to create the lease timer: %w", err)
	}
	l := &initLease{id: id, freeze: freeze, timer: os.NewFile(uintptr(fd), "lease-timer"), until: until}
	if err := l.arm(); err != nil {
		_ = l.timer.Close()
		return nil, err
	}
	go l.watch()
	return l, nil
}

// arm sets the timer to fire at the deadline (at once if it passed). The caller holds
// mu, or is the constructor.
func (l *initLease) arm() error {
	// A zero value disarms a timerfd: a deadline of 0 (never renewed) is 1 ns instead,
	// long past.
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(max(l.until, 1))}
	if err := unix.TimerfdSettime(int(l.timer.Fd()), unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
		return fmt.Errorf("failed to arm the lease timer: %w", err)
	}
	return nil
}

// watch fences the sandbox each time the timer fires with the deadline past. It runs
// for the life of the init (which ends with os.Exit).
func (l *initLease) watch() {
	var buf [8]byte
	for {
		if _, err := l.timer.Read(buf[:]); err != nil {
			fmt.Fprintf(os.Stderr, "nsinit %s: lease timer failed, killing the sandbox: %v\n", l.id, err)
			_ = unix.Kill(-1, unix.SIGKILL)
			return
		}
		l.mu.Lock()
		if !l.fenced && Now() >= l.until {
			l.fenceLocked()
		}
		l.mu.Unlock()
	}
}

// fenceLocked stops every spawned process: it freezes the freeze group (the init is
// outside it and keeps running, to hear a renewal) or, where that is impossible, kills
// every process of the pid namespace but the init. It says which on stderr.
func (l *initLease) fenceLocked() {
	l.fenced = true
	if l.freeze >= 0 {
		err := l.writeFreeze("1")
		if err == nil {
			l.frozen = true
			fmt.Fprintf(os.Stderr, "nsinit %s: lease expired: froze the sandbox's processes\n", l.id)
			return
		}
		fmt.Fprintf(os.Stderr, "nsinit %s: lease expired, and freezing failed (%v): killing the sandbox's processes\n", l.id, err)
	} else {
		fmt.Fprintf(os.Stderr, "nsinit %s: lease expired, and there is no freezer: killing the sandbox's processes\n", l.id)
	}
	_ = unix.Kill(-1, unix.SIGKILL) // from pid 1: every other process of the namespace
}

// renew extends the deadline to until if that is later, and thaws a fenced sandbox
// whose new deadline is still ahead.
func (l *initLease) renew(until int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewLocked(until)
}

func (l *initLease) renewLocked(until int64) {
	if until <= l.until {
		return
	}
	l.until = until
	if err := l.arm(); err != nil {
		// Without a timer the deadline cannot be held: fence now rather than never.
		fmt.Fprintf(os.Stderr, "nsinit %s: %v\n", l.id, err)
		if !l.fenced {
			l.fenceLocked()
		}
		return
	}
	if !l.fenced || Now() >= until {
		return
	}
	if l.frozen {
		if err := l.writeFreeze("0"); err != nil {
			// Stay fenced: a spawn would take the init into a frozen group. The next
			// renewal tries again.
			fmt.Fprintf(os.Stderr, "nsinit %s: lease renewed, but thawing failed (the sandbox stays fenced): %v\n", l.id, err)
			return
		}
		l.frozen = false
		fmt.Fprintf(os.Stderr, "nsinit %s: lease renewed: thawed the sandbox's processes\n", l.id)
	}
	l.fenced = false
}

// hold renews the deadline to until (the one a spawn request carries: the server's
// latest, which may be newer than its last lease frame if that is still queued) and
// returns nil with mu held if the lease is valid; the caller forks, then calls
// release. A lease that has run out is fenced (if the timer has not yet) and
// ErrLeaseExpired returned, without mu. A nil lease always holds.
func (l *initLease) hold(until int64) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	l.renewLocked(until)
	if l.fenced || Now() >= l.until {
		if !l.fenced {
			l.fenceLocked()
		}
		l.mu.Unlock()
		return ErrLeaseExpired
	}
	return nil
}

// release ends a hold that returned nil.
func (l *initLease) release() {
	if l != nil {
		l.mu.Unlock()
	}
}

// writeFreeze writes v ("1" or "0") to the freeze group's cgroup.freeze.
func (l *initLease) writeFreeze(v string) error {
	if _, err := unix.Write(l.freeze, []byte(v)); err != nil {
		return fmt.Errorf("failed to write cgroup.freeze: %w", err)
	}
	return nil
}
