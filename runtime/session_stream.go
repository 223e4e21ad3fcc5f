package runtime

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sessStream captures one output stream of one session command from a fresh FIFO.
//
// A goroutine reads the FIFO as the command writes (so a command writing more than a
// pipe's buffer never blocks) into a buffer capped at limit. The session holds a write
// end of its own until the command's frame arrives, so the reader never sees EOF before
// the shell has opened the FIFO. Everything the command wrote before it finished is in
// the pipe when its frame arrives; finish reads all of it, then waits a short bound
// for EOF, which a background child still holding the FIFO would otherwise postpone.
type sessStream struct {
	path  string
	f     *os.File // read end: nonblocking, in the poller
	wfd   int      // the session's own write end
	limit int
	buf   []byte // owned by the reader goroutine until done is closed
	trunc bool
	done  chan struct{}
}

func sessOpenStream(sb *Sandbox, path string, limit int) (*sessStream, error) {
	_ = os.Remove(path)
	if err := sessAsOwner(sb, func() error { return unix.Mkfifo(path, 0o600) }); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	wfd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	st := &sessStream{path: path, f: f, wfd: wfd, limit: limit, done: make(chan struct{})}
	go st.read()
	return st, nil
}

func (st *sessStream) read() {
	defer close(st.done)
	b := make([]byte, 32<<10)
	for {
		n, err := st.f.Read(b)
		st.add(b[:n])
		if err != nil {
			return
		}
	}
}

func (st *sessStream) add(p []byte) {
	if room := st.limit - len(st.buf); len(p) > room {
		p = p[:max(room, 0)]
		st.trunc = true
	}
	st.buf = append(st.buf, p...)
}

// finish stops capturing and returns the bytes and whether some were dropped. It waits
// up to wait for EOF before cutting the stream off.
func (st *sessStream) finish(wait time.Duration) ([]byte, bool) {
	_ = unix.Close(st.wfd)
	select {
	case <-st.done:
	default:
		t := time.NewTimer(wait)
		select {
		case <-st.done:
		case <-t.C:
			_ = st.f.SetReadDeadline(time.Now())
			<-st.done
		}
		t.Stop()
		// What the reader had not reached yet is still in the pipe: take exactly what
		// is there now, so a background writer that never stops cannot keep us here.
		_ = st.f.SetReadDeadline(time.Time{})
		if rc, err := st.f.SyscallConn(); err == nil {
			_ = rc.Read(func(fd uintptr) bool {
				left, err := sessPending(int(fd))
				b := make([]byte, 32<<10)
				for err == nil && left > 0 {
					n, rerr := unix.Read(int(fd), b[:min(left, len(b))])
					if n <= 0 || rerr != nil {
						break
					}
					st.add(b[:n])
					left -= n
				}
				return true
			})
		}
	}
	st.f.Close()
	_ = os.Remove(st.path)
	if st.buf == nil {
		st.buf = []byte{}
	}
	return st.buf, st.trunc
}
