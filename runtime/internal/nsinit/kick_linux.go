package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// forkKick wakes the reaper, which waits in waitid, when a spawn forked while it had no
// child to wait for (waitid fails with ECHILD at once then). Between execs of a short
// command the init usually has no child left, so under load this is most execs.
//
// The reaper waits for the kick in read(2) on an eventfd, in the kernel, where the
// spawner's write wakes its thread directly. A Go channel, as before, parked the
// reaper's goroutine: its thread went to sleep in the scheduler, and the spawner's send
// woke another thread to steal the goroutine from the spawner's P, which sysmon took
// back meanwhile, about three thread wake-ups in place of one (BENCHMARKS.md, "#14,
// fifth pass"). The write is made only when the reaper says it waits (idle), so a
// spawn while it has children costs an atomic load.
type forkKick struct {
	fd   int         // an eventfd, close-on-exec
	idle atomic.Bool // the reaper found no child and waits, or is about to, on fd
}

func newForkKick() (*forkKick, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("failed to make the reaper's eventfd: %w", err)
	}
	return &forkKick{fd: fd}, nil
}

// forked is called by the spawner after each fork: it wakes the reaper if it waits.
func (k *forkKick) forked() {
	if k.idle.Load() {
		// 1 added to the eventfd's counter (8 bytes, native endian). It fails only with
		// the counter at its maximum (EAGAIN), when the reaper's read returns anyway.
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(k.fd, one[:])
	}
}

// wait is called by the reaper after waitid found no child: it returns once a child may
// exist. It marks the reaper idle before it looks again, so that a fork after that
// look sees the mark and kicks, and a fork before it is found by the look.
func (k *forkKick) wait() {
	k.idle.Store(true)
	defer k.idle.Store(false)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); !errors.Is(err, unix.ECHILD) {
		return
	}
	var b [8]byte
	for {
		if _, err := unix.Read(k.fd, b[:]); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
