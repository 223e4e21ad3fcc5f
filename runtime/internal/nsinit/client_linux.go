package nsinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// initBinary is the binary run as the init: this one. TestMeasure may point it at a
// built sandgate binary to measure the real thing.
var initBinary = "/proc/self/exe"

// closeWait bounds how long Close waits for the init to exit by itself after its
// control socket closed, before it kills it.
const closeWait = 5 * time.Second

// Init is a running sandbox init, seen from the server. All methods are safe for
// concurrent use. One goroutine, started by Start and ended by Close, reads the
// init's frames; Child.Wait and Spawn wait on it. With Config.Lease a second one,
// also ended by Close, sends the renewals (Renew).
type Init struct {
	cmd    *exec.Cmd
	c      *conn
	pid    int
	readOK chan struct{} // closed when the reader goroutine returned

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]chan *frame // spawn and signal replies
	children map[uint64]*Child
	err      error // set once the init is gone: ErrClosed or ErrInitExited
	null     int   // /dev/null for spawns without some stdio (devNull), or -1
	freezeFD int   // the init's fd of the freeze group's cgroup.freeze (config frame), or 0
	// spawnPath is how the init starts processes, from its ready frame.
	spawnPath SpawnPath

	nullMu sync.RWMutex // held for reading by Spawn while it uses null; Close closes it under the lock

	closeOnce sync.Once
	waitErr   error

	lease initLeaseSender // Config.Lease's renewals; see Renew
}

// Start starts an init for cfg and waits, bounded by ctx, until its sandbox is set up.
//
//  1. A SOCK_SEQPACKET socketpair is made; the init gets one end as fd 3.
//  2. This binary (/proc/self/exe) is re-executed with only SANDGATE_NSINIT=1 in its
//     environment, in new pid, mount, uts, ipc and (unless NetworkHost) net
//     namespaces, and with UserNS in a new user namespace owning them, with
//     Pdeathsig SIGKILL so it dies with this process.
//  3. With UserNS, the workspace is cloned into an idmapped mount for the init's
//     user namespace.
//  4. The Config is sent (with that mount); the init builds the sandbox and answers
//     ready or error.
//
// A binary that links this package becomes the init when re-executed (see init).
func Start(ctx context.Context, cfg Config) (*Init, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var in *Init
	onForkerThread(func() { in, err = start(cfg) })
	if err != nil {
		return nil, fmt.Errorf("failed to start the init: %w", err)
	}
	fds, err := userNSFiles(cfg, in.pid)
	if err == nil {
		err = in.handshake(ctx, cfg, fds)
		closeFDs(fds)
	}
	if err != nil {
		in.kill()
		return nil, fmt.Errorf("failed to set up the sandbox: %w", err)
	}
	go in.readLoop()
	if cfg.Lease {
		in.lease.start(in, cfg.LeaseUntil)
	}
	return in, nil
}

// forker is the one OS thread every init is forked from. Pdeathsig fires when the
// thread that forked the child ends, not the process, and Go ends a thread whenever a
// goroutine locked to it returns without unlocking; any thread of the pool may serve
// such a goroutine later. This thread is locked by a goroutine that never returns, so
// the inits die with the process and only then. Starts are serialized on it (the fork
// and exec of one init take about a millisecond).
var forker struct {
	once sync.Once
	jobs chan func()
}

// onForkerThread runs f on the forker thread and waits for it.
func onForkerThread(f func()) {
	forker.once.Do(func() {
		forker.jobs = make(chan func())
		go forkerLoop(forker.jobs)
	})
	done := make(chan struct{})
	forker.jobs <- func() {
		defer close(done)
		f()
	}
	<-done
}

// forkerLoop runs for the life of the process (leakcheck knows it).
func forkerLoop(jobs <-chan func()) {
	goruntime.LockOSThread() // never unlocked
	for f := range jobs {
		f()
	}
}

func start(cfg Config) (*Init, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to make the control socket: %w", err)
	}
	// SO_PASSCRED makes the kernel attach (and translate) the pid in started frames.
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		closeFDs(fds[:])
		return nil, fmt.Errorf("failed to set SO_PASSCRED: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "nsinit-control")
	defer theirs.Close()
	c, err := newConn(fds[0], "nsinit-control", serverRecvBuf)
	if err != nil {
		return nil, err
	}
	flags := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC)
	if cfg.Network != NetworkHost {
		flags |= unix.CLONE_NEWNET
	}
	extra := []*os.File{theirs}
	var cgDir *os.File
	if cfg.Cgroup != "" {
		home, dir, err := openCgroup(cfg.Cgroup)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		defer home.Close()
		defer dir.Close()
		extra, cgDir = append(extra, home, dir), dir
	}
	freezeFD := 0
	if cfg.Freeze != "" {
		f, err := os.OpenFile(cfg.Freeze+"/cgroup.freeze", os.O_WRONLY, 0)
		switch {
		case err == nil:
			defer f.Close()
			freezeFD = ctlFD + len(extra)
			extra = append(extra, f)
		case !errors.Is(err, os.ErrNotExist): // no freezer (before Linux 5.2): the init kills instead
			_ = c.Close()
			return nil, fmt.Errorf("failed to open the freeze group: %w", err)
		}
	}
	cmd := &exec.Cmd{
		Path: initBinary,
		Args: []string{"sandgate-init", cfg.ID},
		// The marker, the init's GOMAXPROCS (initProcs), and for a binary built with
		// the race detector (tests) no second of waiting at exit to report races: an
		// init that waits holds its sandbox's close up by that second. Sandbox
		// processes get the env of their spawn only.
		Env:        []string{markerEnv + "=1", "GOMAXPROCS=" + strconv.Itoa(initProcs), "GORACE=atexit_sleep_ms=0"},
		Dir:        "/",
		ExtraFiles: extra,
		// Only a crash of the init itself writes here; sandbox processes get the stdio
		// of their own spawn requests.
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: flags,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	if cgDir != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cgDir.Fd())
	}
	if cfg.UserNS != nil {
		userNSAttr(cmd.SysProcAttr, *cfg.UserNS)
	}
	if err := cmd.Start(); err != nil {
		_ = c.Close()
		return nil, err
	}
	if cfg.Enter != nil {
		if err := cfg.Enter(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = c.Close()
			return nil, fmt.Errorf("failed to place the init: %w", err)
		}
	}
	return &Init{
		cmd: cmd, c: c, pid: cmd.Process.Pid, readOK: make(chan struct{}),
		pending: map[uint64]chan *frame{}, children: map[uint64]*Child{}, null: -1,
		freezeFD: freezeFD,
	}, nil
}

// handshake sends the Config, with fds (see userNSFiles), and waits for ready.
func (in *Init) handshake(ctx context.Context, cfg Config, fds []int) error {
	if err := in.c.send(&frame{Op: opConfig, Config: &cfg, Home: cfg.Cgroup != "", FreezeFD: in.freezeFD}, fds, nil); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = in.c.f.SetReadDeadline(time.Unix(1, 0)) })
	fr, fds, _, err := in.c.recv()
	if !stop() {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	closeFDs(fds)
	switch fr.Op {
	case opReady:
		in.spawnPath = SpawnPath(fr.Code)
		return nil
	case opError:
		return errnoError(fr)
	}
	return fmt.Errorf("%w: expected ready, got %q", ErrProtocol, fr.Op)
}

// PID returns the host pid of the init.
func (in *Init) PID() int { return in.pid }

// SpawnPath says how the init starts processes, as it chose at start.
func (in *Init) SpawnPath() SpawnPath { return in.spawnPath }

// Done returns a channel closed once the init is gone: closed, or exited by itself
// (killed, say); Err then says which.
func (in *Init) Done() <-chan struct{} { return in.readOK }

// Err returns nil while the init runs, then ErrClosed or ErrInitExited.
func (in *Init) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// readLoop dispatches the init's frames until the control socket fails or closes.
func (in *Init) readLoop() {
	defer close(in.readOK)
	for {
		fr, fds, cred, err := in.c.recv()
		if err != nil {
			in.fail(ErrInitExited)
			return
		}
		fr.pidFD = -1
		if fr.Op == opStarted && len(fds) == 1 {
			fr.pidFD, fds = fds[0], nil
		}
		closeFDs(fds)
		in.mu.Lock()
		switch fr.Op {
		case opStarted, opOK, opError:
			if c := in.children[fr.ID]; c != nil && c.noWait && fr.Op == opError {
				// A NoWait start that failed: nobody waits for the answer.
				delete(in.children, fr.ID)
				c.finish(ExitStatus{}, fmt.Errorf("failed to spawn %s: %w: %w", c.name, ErrNotStarted, startError(fr)))
			}
			if ch, ok := in.pending[fr.ID]; ok {
				delete(in.pending, fr.ID)
				if fr.Op == opStarted && cred != nil {
					fr.hostPID = int(cred.Pid) // translated to our pid namespace by the kernel
				}
				if c := in.children[fr.ID]; c != nil && fr.pidFD >= 0 {
					c.pidFD, fr.pidFD = fr.pidFD, -1 // the child owns it from now on
				}
				ch <- fr
			}
			if fr.pidFD >= 0 {
				_ = unix.Close(fr.pidFD) // a request given up on, or no child to keep it
			}
		case opExit:
			if ch, ok := in.children[fr.ID]; ok {
				delete(in.children, fr.ID)
				ch.finish(ExitStatus{Code: fr.Code, Signal: syscall.Signal(fr.Signal)}, nil)
			}
		}
		in.mu.Unlock()
	}
}

// fail marks the init gone (the first reason wins) and ends every wait on it.
func (in *Init) fail(reason error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.err == nil {
		in.err = reason
	}
	for id, ch := range in.pending {
		delete(in.pending, id)
		close(ch)
	}
	for id, ch := range in.children {
		delete(in.children, id)
		ch.finish(ExitStatus{}, in.err)
	}
}

// request sends fr (with fds) under a fresh id and waits for its reply.
func (in *Init) request(ctx context.Context, fr *frame, fds []int, child *Child) (*frame, error) {
	ch := make(chan *frame, 1)
	in.mu.Lock()
	if in.err != nil {
		err := in.err
		in.mu.Unlock()
		return nil, err
	}
	if fr.ID == 0 {
		in.nextID++
		fr.ID = in.nextID
	}
	in.pending[fr.ID] = ch
	if child != nil {
		child.id = fr.ID
		in.children[fr.ID] = child
	}
	in.mu.Unlock()
	forget := func() {
		in.mu.Lock()
		delete(in.pending, fr.ID)
		if child != nil {
			delete(in.children, fr.ID)
		}
		in.mu.Unlock()
	}
	if err := in.c.send(fr, fds, nil); err != nil {
		forget()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			in.mu.Lock()
			defer in.mu.Unlock()
			return nil, in.err
		}
		return r, nil
	case <-ctx.Done():
		// The process may still start; its frames are then ignored, and Close kills
		// it with the rest.
		forget()
		return nil, ctx.Err()
	}
}

// post sends a NoWait spawn frame under a fresh id, registering child, without waiting
// for an answer.
func (in *Init) post(fr *frame, fds []int, child *Child) error {
	in.mu.Lock()
	if in.err != nil {
		err := in.err
		in.mu.Unlock()
		return err
	}
	in.nextID++
	fr.ID, child.id = in.nextID, in.nextID
	in.children[fr.ID] = child
	in.mu.Unlock()
	if err := in.c.send(fr, fds, nil); err != nil {
		in.mu.Lock()
		delete(in.children, fr.ID)
		in.mu.Unlock()
		return err
	}
	return nil
}

// Close ends the sandbox: it closes the control socket, on which the init kills every
// process inside and exits, and waits for the init (killing it after closeWait). Waits
// on children that had not exited return ErrClosed. Calling Close again returns the
// first call's result.
func (in *Init) Close() error {
	in.closeOnce.Do(func() {
		in.fail(ErrClosed)
		_ = in.c.f.SetDeadline(time.Unix(1, 0))
		<-in.readOK
		_ = in.c.Close()
		in.nullMu.Lock()
		in.mu.Lock()
		if in.null >= 0 {
			_ = unix.Close(in.null)
			in.null = -1
		}
		in.mu.Unlock()
		in.nullMu.Unlock()
		in.lease.wait()
		t := time.AfterFunc(closeWait, func() { _ = in.cmd.Process.Kill() })
		err := in.cmd.Wait()
		t.Stop()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			in.waitErr = fmt.Errorf("failed to wait for the init: %w", err)
		}
	})
	return in.waitErr
}

// kill ends an init whose handshake failed.
func (in *Init) kill() {
	_ = in.cmd.Process.Kill()
	_ = in.cmd.Wait()
	_ = in.c.Close()
}

// openCgroup opens the cgroup2 group dir: its cgroup.procs for writing (the init's way
// home after placing a spawn) and the directory itself (to clone the init into it,
// and for the init's probe of clone3 into a cgroup).
func openCgroup(dir string) (procs, d *os.File, err error) {
	procs, err = os.OpenFile(dir+"/cgroup.procs", os.O_WRONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to open the init's cgroup: %w", err)
	}
	d, err = os.Open(dir)
	if err != nil {
		_ = procs.Close()
		return nil, nil, fmt.Errorf("failed to open the init's cgroup: %w", err)
	}
	return procs, d, nil
}
