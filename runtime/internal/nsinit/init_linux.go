package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// markerEnv, set by Start in the init's environment, makes a re-executed binary run as
// the init. It is the init's only variable: nothing of the server's environment
// crosses into the sandbox.
const markerEnv = "SANDGATE_NSINIT"

// ctlFD is the init's end of the control socketpair (the first of ExtraFiles).
const ctlFD = 3

// IsInit reports whether this process was started by Start to be a sandbox's init.
func IsInit() bool { return os.Getenv(markerEnv) == "1" }

// Main runs the sandbox init and exits; it never returns. Call it first thing in main
// (and in TestMain) when IsInit reports true. Its exit code is 0 after its control
// socket closed, 128+n after signal n, and 1 if the setup failed.
func Main() {
	os.Exit(runInit())
}

// initProc is the init's state. kids maps the pid of each live spawned process to its
// spawn id; mu is held across fork, registration and the started frame, and by the
// reaper across wait4 and the lookup, so a process is never reaped before its started
// frame is sent (the SCM_CREDENTIALS pid must still exist) and exit frames follow
// started ones.
type initProc struct {
	c    *conn
	cfg  Config
	jobs chan spawnJob

	mu   sync.Mutex
	kids map[int]uint64
	ids  map[uint64]int
}

func runInit() int {
	// Signals first, so no child can exit unnoticed and SIGTERM is never fatal by
	// default (a Go pid 1 would exit 2 without running our teardown).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "nsinit: not pid 1 of a new pid namespace")
		return 1
	}
	// fds the server inherited without O_CLOEXEC (from its own parent) reached us the
	// same way; none may reach the sandbox.
	if err := unix.CloseRange(0, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintln(os.Stderr, "nsinit: failed to mark fds close-on-exec:", err)
		return 1
	}
	c, err := newConn(ctlFD, "nsinit-control", initRecvBuf)
	if err != nil {
		return 1
	}
	ip := &initProc{c: c, jobs: make(chan spawnJob), kids: map[int]uint64{}, ids: map[uint64]int{}}
	if err := ip.setup(); err != nil {
		_ = c.send(errorFrame(0, err), nil, nil)
		return 1
	}
	if err := c.send(&frame{Op: opReady}, nil, nil); err != nil {
		return 1
	}
	done := make(chan int, 1)
	go ip.readLoop(done)
	for {
		select {
		case code := <-done:
			return ip.teardown(code)
		case s := <-sigs:
			if s == unix.SIGCHLD {
				ip.reap()
				continue
			}
			return ip.teardown(128 + int(s.(syscall.Signal)))
		}
	}
}

// setup reads the Config, builds the sandbox and starts the hardened spawner thread.
func (ip *initProc) setup() error {
	fr, fds, _, err := ip.c.recv()
	if err != nil {
		return err
	}
	defer closeFDs(fds)
	if fr.Op != opConfig || fr.Config == nil {
		return fmt.Errorf("%w: expected a config frame, got %q", ErrProtocol, fr.Op)
	}
	if ip.cfg, err = fr.Config.withDefaults(); err != nil {
		return err
	}
	if err := setupRoot(ip.cfg, fds); err != nil {
		return err
	}
	if err := setupUTSNet(ip.cfg); err != nil {
		return err
	}
	if err := unix.Chdir("/workspace"); err != nil {
		return fmt.Errorf("failed to chdir to /workspace: %w", err)
	}
	ready := make(chan error, 1)
	go ip.spawnLoop(ready)
	return <-ready
}

// readLoop serves requests until the control socket closes or breaks, then reports the
// exit code on done.
func (ip *initProc) readLoop(done chan<- int) {
	for {
		fr, fds, _, err := ip.c.recv()
		if err != nil {
			code := 0
			if !errors.Is(err, io.EOF) {
				code = 1
			}
			done <- code
			return
		}
		switch fr.Op {
		case opSpawn:
			ip.jobs <- spawnJob{fr: fr, fds: fds}
		case opSignal:
			closeFDs(fds)
			ip.signal(fr)
		default:
			closeFDs(fds)
			_ = ip.c.send(errorFrame(fr.ID, fmt.Errorf("%w: unknown op %q", ErrProtocol, fr.Op)), nil, nil)
		}
	}
}

// signal sends a signal to the process group of a live spawned process.
func (ip *initProc) signal(fr *frame) {
	ip.mu.Lock()
	pid, ok := ip.ids[fr.Target]
	var err error
	if !ok {
		err = ErrExited
	} else if kerr := unix.Kill(-pid, syscall.Signal(fr.Sig)); kerr != nil {
		err = fmt.Errorf("failed to signal process group %d: %w", pid, kerr)
	}
	ip.mu.Unlock()
	if err != nil {
		_ = ip.c.send(errorFrame(fr.ID, err), nil, nil)
		return
	}
	_ = ip.c.send(&frame{Op: opOK, ID: fr.ID}, nil, nil)
}

// reap collects every exited child, spawned or orphaned (re-parented to pid 1), and
// reports the spawned ones.
func (ip *initProc) reap() {
	for {
		// Wait4 runs under mu too: a process forked but not yet announced must stay
		// unreaped, or its pid could not be named in the started frame.
		var ws unix.WaitStatus
		ip.mu.Lock()
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		id, ok := ip.kids[pid]
		delete(ip.kids, pid)
		delete(ip.ids, id)
		ip.mu.Unlock()
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if !ok {
			continue
		}
		fr := &frame{Op: opExit, ID: id, Code: ws.ExitStatus()}
		if ws.Signaled() {
			fr.Code, fr.Signal = -1, int(ws.Signal())
		}
		_ = ip.c.send(fr, nil, nil)
	}
}

// teardown kills everything in the sandbox and returns code. kill(-1) from pid 1
// reaches every other process of the namespace; the kernel would also kill them once
// pid 1 exits, this just does not leave it to that.
func (ip *initProc) teardown(code int) int {
	_ = unix.Kill(-1, unix.SIGKILL)
	return code
}
