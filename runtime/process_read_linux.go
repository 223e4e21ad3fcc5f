package runtime

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// hotWait is how long an output reader that just got data waits for more in a poll(2)
// of its own before it goes back to Go's netpoller.
const hotWait = 20 * time.Millisecond

// readOutput copies one output of p into the ring until EOF or error: EIO on a PTY
// master once every holder of the slave is gone, or a stop from drain.
//
// An idle or interactive output waits on Go's netpoller, which costs no thread and
// wakes the reader fastest for a small read (an echo). Once bulk data flows (a read of
// smallOutput or more), the reader waits in poll(2) on the fd (and stop) instead, so
// the kernel wakes it directly: through the netpoller each chunk costs an extra EAGAIN read and a handoff
// between threads, and a PTY (whose reads return at most 4 KiB) stalls its writer
// while the reader is slow to come back; see BENCHMARKS.md ("Runtime: exec, processes, PTY output") for the
// measurements. After hotWait without data it goes back to the netpoller.
//
// While a holding subscriber is a whole ring behind, it reads nothing (ring.waitRoom),
// and it never reads more than the ring has room for: the process then blocks in its
// own writes, as on a terminal, until the subscriber reads on or outstays its bound.
func (p *Process) readOutput(o output, stop *stopper) {
	sc, err := o.f.SyscallConn()
	if err != nil {
		return
	}
	room := p.ring.freeRoom()
	for {
		// A holding subscriber is a ring behind: read nothing until it reads on, so
		// the process blocks in its writes.
		if room <= 0 {
			if room = p.ring.waitRoom(stop.done()); room <= 0 {
				return
			}
		}
		// Cold: wait on the netpoller, holding no buffer (an idle terminal would keep
		// it for as long as it is idle).
		var buf *[]byte
		var n int
		var rerr error
		err := sc.Read(func(fd uintptr) bool {
			if buf == nil {
				buf = readBufs.Get().(*[]byte)
			}
			n, rerr = readRetry(int(fd), (*buf)[:min(len(*buf), room)])
			if errors.Is(rerr, unix.EAGAIN) {
				readBufs.Put(buf)
				buf = nil
				return false
			}
			return true
		})
		if n > 0 {
			room = p.ring.write(o.stream, (*buf)[:n])
		}
		if err != nil || n <= 0 {
			if buf != nil {
				readBufs.Put(buf)
			}
			return // io.EOF (n == 0), EIO, or the drain deadline
		}
		if n < smallOutput {
			readBufs.Put(buf)
			continue // interactive output: the netpoller wakes us fastest
		}
		// Hot: wait in poll(2) while output keeps coming.
		var hotErr error
		cerr := sc.Control(func(fd uintptr) { room, hotErr = p.readHot(int(fd), stop, o.stream, *buf, room) })
		readBufs.Put(buf)
		if cerr != nil || !errors.Is(hotErr, errIdle) {
			return
		}
	}
}

// readBufs holds the output readers' buffers between reads.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufBytes); return &b }}

// errIdle ends readHot when the output went quiet.
var errIdle = errors.New("idle")

// readHot reads fd while it has data, waiting in ppoll(2). It returns errIdle after
// hotWait without data; any other return means the output ended or was stopped. room
// is how much it may read before a holding subscriber must read on (see ring.append);
// it returns the room left.
//
// Subscribers are woken at once for small output (an echo, a prompt, a short command's
// output), however often it comes, so interactive use costs no added latency. Bulk
// output wakes them at most once per wakeDelay, or per wakeBatch bytes, instead of once
// per read: a PTY read returns at most 4 KiB, and waking a subscriber goroutine for
// each costs more CPU than the read itself.
func (p *Process) readHot(fd int, stop *stopper, stream Stream, buf []byte, room int) (int, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(stop.fd), Events: unix.POLLIN}}
	pending := 0           // bytes in the ring that subscribers were not woken for
	var lastWake time.Time // zero: long ago, so the first output is not held back
	wake := func() {
		pending = 0
		lastWake = time.Now()
		p.ring.wake()
	}
	defer func() {
		if pending > 0 {
			p.ring.wake()
		}
	}()
	add := func(n int) {
		pending += n
		full := pending >= wakeBatch
		if full {
			pending = 0
			lastWake = time.Now()
		}
		room = p.ring.append(stream, buf[:n], full)
	}
	for {
		if room <= 0 {
			// A holder is a ring behind: wake it, and read no more until it reads on.
			wake()
			if room = p.ring.waitRoom(stop.done()); room <= 0 {
				return 0, errStopped
			}
		}
		// Read first: a fast producer has usually written more by now.
		n, err := readRetry(fd, buf[:min(len(buf), room)])
		if n > 0 {
			add(n)
			continue
		}
		if !errors.Is(err, unix.EAGAIN) {
			return room, errEnded
		}
		// Nothing to read right now. Wake subscribers, unless this is bulk output and
		// they were woken very recently: then hold the wake-up for the rest of wakeDelay.
		wait := hotWait
		if pending > 0 {
			if since := time.Since(lastWake); pending < smallOutput || since >= wakeDelay {
				wake()
			} else {
				wait = wakeDelay - since
			}
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		ts := unix.NsecToTimespec(int64(wait))
		k, err := unix.Ppoll(fds, &ts, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return room, err
		case k == 0 && pending > 0:
			wake()
			continue
		case k == 0:
			return room, errIdle
		case fds[1].Revents != 0:
			return room, errStopped
		}
	}
}

const (
	// wakeBatch is the most output readHot adds before it wakes subscribers.
	wakeBatch = 32 << 10
	// wakeDelay is the longest readHot holds back a wake-up while bulk output flows.
	wakeDelay = time.Millisecond
	// smallOutput is the most output that counts as interactive: it wakes subscribers
	// at once. A bulk PTY stream arrives in reads of about 4 KiB.
	smallOutput = 2 << 10
)

var (
	errStopped = errors.New("stopped")
	errEnded   = errors.New("ended")
)

func readRetry(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// stopper wakes readers blocked in readHot: an eventfd in their poll sets, and a
// channel for those waiting for a holder (ring.waitRoom).
type stopper struct {
	fd   int
	ch   chan struct{}
	once sync.Once
}

func newStopper() *stopper {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		fd = -1 // poll ignores a negative fd; readers then end through deadlines only
	}
	return &stopper{fd: fd, ch: make(chan struct{})}
}

// stop makes every readHot and waitRoom return.
func (s *stopper) stop() {
	s.once.Do(func() { close(s.ch) })
	if s.fd >= 0 {
		_, _ = unix.Write(s.fd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
}

// done returns a channel closed by stop.
func (s *stopper) done() <-chan struct{} { return s.ch }

// close releases the eventfd; call it only once no reader uses it.
func (s *stopper) close() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}

// tryWrite writes as much of b to f (non-blocking, on Go's poller) as it takes now,
// without waiting: a partial count and no error when f is full.
func tryWrite(f *os.File, b []byte) (int, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	if err := sc.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, err := unix.Write(int(fd), b[n:])
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				if !errors.Is(err, unix.EAGAIN) {
					werr = err
				}
				return true
			}
			n += k
		}
		return true
	}); err != nil {
		return n, err
	}
	return n, werr
}
