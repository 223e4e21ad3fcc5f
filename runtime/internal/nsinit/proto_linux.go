package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Frame ops; the package doc describes the protocol.
const (
	opConfig  = "config"  // client → init: the Config, first frame
	opReady   = "ready"   // init → client: setup done, requests may follow
	opSpawn   = "spawn"   // client → init: start a process (3 fds, or 1 for a TTY)
	opStarted = "started" // init → client: the spawn's inner pid (+ SCM_CREDENTIALS)
	opSignal  = "signal"  // client → init: signal a spawned process's group
	opOK      = "ok"      // init → client: the signal was sent
	opError   = "error"   // init → client: a request (or the setup) failed
	opExit    = "exit"    // init → client: a spawned process ended
	opLease   = "lease"   // client → init: the lease's new deadline; no reply
	opSpill   = "spill"   // client → init: the request is in the attached file (spill_linux.go)
)

// maxFrame bounds one frame. A SOCK_SEQPACKET message must fit in the sender's socket
// buffer (about 208 KiB by default), so a spawn's argv and env together are capped
// well below it.
const maxFrame = 128 << 10

// frame is one protocol message, in one SOCK_SEQPACKET datagram (encoded as
// codec_linux.go says).
type frame struct {
	Op      string
	ID      uint64
	Target  uint64 // signal: the spawn's id
	Config  *Config
	Argv    []string
	Env     []string
	Dir     string
	TTY     bool
	Session bool
	Extra   int  // spawn: fds after the stdio, for fds 3...
	Cgroup  bool // spawn: a cgroup.procs to start in follows the stdio and extra fds
	// CgroupDir (spawn): that group's directory follows its cgroup.procs.
	CgroupDir bool
	Status    bool // spawn: the last fd is a pipe for the exit status (SpawnRequest.Status)
	NoWait    bool // spawn: answer only a failure (SpawnRequest.NoWait)
	// Home (config) says the init's fd 4 is its own group's cgroup.procs and fd 5
	// its directory.
	Home bool
	// FreezeFD (config) is the init's fd of the freeze group's cgroup.freeze, or 0.
	FreezeFD int
	// Lease (lease, spawn) is the lease's deadline as the client knows it, in
	// nanoseconds of CLOCK_BOOTTIME: the init extends its own to it first.
	Lease  int64
	PID    int
	Sig    int
	Code   int
	Signal int
	Err    string
	Errno  int

	// hostPID is the pid of a started frame's SCM_CREDENTIALS, in the receiver's namespace.
	hostPID int
	// pidFD is the pidfd a started frame carried, owned by the receiver, or -1.
	pidFD int
}

// conn is one end of the control socketpair. send is safe for concurrent use; recv
// must be called from one goroutine at a time. On the server's end both go through
// Go's poller, so no thread is pinned while waiting and Close unblocks them. The
// init's end is blocking (newBlockingConn): its spawner thread waits in recvmsg
// itself and wakes straight from the kernel, without the poller and a hand-off to
// that thread (see spawnLoop).
type conn struct {
	f    *os.File
	rc   syscall.RawConn // nil on a blocking conn
	fd   int             // a blocking conn's fd
	wmu  sync.Mutex
	wbuf []byte // send's encoding buffer, under wmu
	woob []byte // send's control data, under wmu
	buf  []byte
	oob  []byte

	// What recvReused decodes into and returns, reused by its next call.
	rfr   frame
	rfds  []int
	rargv []string
	renv  []string
	// spill is the mapping the last spilled request was decoded from, or nil.
	spill []byte
}

// Receive buffers: the init takes requests of up to maxFrame; the server only gets
// small replies (error texts are cut to maxErr), so each Init costs it little memory.
const (
	smallFrame    = 4 << 10 // send keeps a buffer this big between frames
	initRecvBuf   = maxFrame
	serverRecvBuf = 8 << 10
	maxErr        = 2 << 10
)

func newConn(fd int, name string, bufSize int) (*conn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("failed to set the control socket non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to open the control socket: %w", err)
	}
	return &conn{
		f: f, rc: rc,
		buf: make([]byte, bufSize),
		oob: make([]byte, unix.CmsgSpace(4*3)+unix.CmsgSpace(unix.SizeofUcred)),
	}, nil
}

// newBlockingConn wraps fd, left in blocking mode, without Go's poller: recv and send
// block their thread. The init's end, which lives as long as the init.
func newBlockingConn(fd, bufSize int) *conn {
	return &conn{fd: fd, buf: make([]byte, bufSize), oob: make([]byte, unix.CmsgSpace(4*3)+unix.CmsgSpace(unix.SizeofUcred))}
}

func (c *conn) Close() error {
	if c.rc == nil {
		return unix.Close(c.fd)
	}
	return c.f.Close()
}

// send writes fr with fds (SCM_RIGHTS) and cred (SCM_CREDENTIALS) attached. Its
// encoding and control data go to buffers of the conn, kept for the next frame while
// small: a frame costs no allocation.
func (c *conn) send(fr *frame, fds []int, cred *unix.Ucred) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	oob := appendRights(c.woob[:0], fds)
	if cred != nil {
		oob = appendCredentials(oob, cred)
	}
	if cap(oob) <= smallFrame {
		c.woob = oob
	}
	b, err := encodeFrame(c.wbuf[:0], fr)
	if err != nil {
		return fmt.Errorf("failed to encode a %s frame: %w", fr.Op, err)
	}
	if len(b) > maxFrame {
		return c.sendSpilled(fr, b, fds, cred)
	}
	if cap(b) <= smallFrame {
		c.wbuf = b // kept for the next frame; a big one is left to the GC
	}
	return c.sendEncoded(fr.Op, b, oob)
}

// sendEncoded sends an encoded frame with its control data. The caller holds wmu.
func (c *conn) sendEncoded(op string, b, oob []byte) error {
	var err error
	if c.rc == nil {
		for err = unix.EINTR; errors.Is(err, unix.EINTR); {
			err = sendmsg(c.fd, b, oob, unix.MSG_NOSIGNAL)
		}
	} else {
		err = c.sendPolled(b, oob)
	}
	if err != nil {
		return fmt.Errorf("failed to send a %s frame: %w", op, err)
	}
	return nil
}

// sendPolled is send's sendmsg on a conn on Go's poller; apart from send for the
// reason recvPolled is.
func (c *conn) sendPolled(b, oob []byte) error {
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, unix.MSG_NOSIGNAL)
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err == nil {
		err = serr
	}
	return err
}

// recv reads one frame with the fds and credentials attached to it. The fds are
// close-on-exec; the caller owns them. It returns io.EOF once the peer closed.
func (c *conn) recv() (*frame, []int, *unix.Ucred, error) {
	var n, oobn, flags int
	var err error
	if c.rc == nil {
		for err = unix.EINTR; errors.Is(err, unix.EINTR); {
			n, oobn, flags, err = recvmsg(c.fd, c.buf, c.oob, unix.MSG_CMSG_CLOEXEC)
		}
	} else {
		n, oobn, flags, err = c.recvPolled()
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to receive a frame: %w", err)
	}
	fds, cred, perr := parseControl(c.oob[:oobn], nil)
	if n == 0 && oobn == 0 {
		return nil, nil, nil, io.EOF
	}
	var fr *frame
	switch {
	case perr != nil || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		err = fmt.Errorf("%w: truncated frame", ErrProtocol)
	default:
		if fr, err = decodeFrame(c.buf[:n]); err == nil && fr.Op == opSpill {
			err = fmt.Errorf("%w: a spilled frame is for the init alone", ErrProtocol)
		}
	}
	if err != nil {
		closeFDs(fds)
		return nil, nil, nil, err
	}
	return fr, fds, cred, nil
}

// recvReused is recv for the init's spawner, on a blocking conn, without
// credentials: the frame and the fds slice it returns are the conn's, overwritten by
// its next call, and the frame's strings are views of the conn's receive buffer,
// valid until then too (decodeFrameInto). What outlives the request must be copied.
// Once its buffers have grown to the requests' size, a request costs no allocation:
// an init whose spawns allocate nothing never reaches its heap's goal, so the Go
// runtime never collects, and never makes the metadata a collection keeps for the
// life of the process (the package doc, "Memory").
func (c *conn) recvReused() (*frame, []int, error) {
	c.unmapSpill() // the previous request's views end here
	var n, oobn, flags int
	var err error
	for err = unix.EINTR; errors.Is(err, unix.EINTR); {
		n, oobn, flags, err = recvmsg(c.fd, c.buf, c.oob, unix.MSG_CMSG_CLOEXEC)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("failed to receive a frame: %w", err)
	}
	fds, _, perr := parseControl(c.oob[:oobn], c.rfds[:0])
	if cap(fds) > cap(c.rfds) {
		c.rfds = fds[:0] // at most 253 fds (SCM_MAX_FD): kept
	}
	if n == 0 && oobn == 0 {
		return nil, nil, io.EOF
	}
	switch {
	case perr != nil || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		err = fmt.Errorf("%w: truncated frame", ErrProtocol)
	default:
		if err = decodeFrameInto(&c.rfr, c.buf[:n], true, c.rargv, c.renv); err == nil && c.rfr.Op == opSpill {
			fds, err = c.unspill(fds)
		}
	}
	if err != nil {
		closeFDs(fds)
		return nil, nil, err
	}
	// Arrays that grew are kept for the next request, up to a bound.
	if cap(c.rfr.Argv) > cap(c.rargv) && cap(c.rfr.Argv) <= maxKeptStrings {
		c.rargv = c.rfr.Argv[:0]
	}
	if cap(c.rfr.Env) > cap(c.renv) && cap(c.rfr.Env) <= maxKeptStrings {
		c.renv = c.rfr.Env[:0]
	}
	return &c.rfr, fds, nil
}

// maxKeptStrings bounds the argv and env arrays recvReused keeps between requests;
// a request with more strings gets arrays of its own, left to the GC.
const maxKeptStrings = 1024

// recvPolled is recv's recvmsg on a conn on Go's poller. Apart from recv, so that
// the variables its closure sets do not go to the heap on the blocking conn's way
// too (the init's, on every spawn).
func (c *conn) recvPolled() (n, oobn, flags int, err error) {
	var rerr error
	err = c.rc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), c.buf, c.oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	return n, oobn, flags, err
}

// closeFDs closes fds. A run of consecutive numbers, as the fds of a frame usually
// are (the kernel gives each the lowest free number), is closed with one close_range
// rather than a close each.
func closeFDs(fds []int) {
	if len(fds) > 1 && consecutive(fds) && unix.CloseRange(uint(fds[0]), uint(fds[len(fds)-1]), 0) == nil {
		return
	}
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// consecutive reports whether fds are n, n+1, n+2, ... in this order.
func consecutive(fds []int) bool {
	for i, fd := range fds {
		if fd < 0 || fd != fds[0]+i {
			return false
		}
	}
	return true
}

// remoteError is an error the init reported: its text, and its errno for errors.Is.
type remoteError struct {
	msg   string
	errno syscall.Errno
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// errnoError rebuilds an error sent in an error frame.
func errnoError(fr *frame) error { return &remoteError{msg: fr.Err, errno: syscall.Errno(fr.Errno)} }

// errorFrame builds the error frame for err, carrying its errno when it has one.
func errorFrame(id uint64, err error) *frame {
	msg := err.Error()
	if len(msg) > maxErr {
		msg = msg[:maxErr]
	}
	fr := &frame{Op: opError, ID: id, Err: msg}
	var en syscall.Errno
	if errors.As(err, &en) {
		fr.Errno = int(en)
	}
	return fr
}
