package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/runtime/internal/procfs"
	"golang.org/x/sys/unix"
)

// markerEnv, set by Start in the init's environment, makes a re-executed binary run as
// the init. Beside GOMAXPROCS (initProcs) and GORACE (for race-enabled builds) it is
// the init's only variable: nothing of the server's environment crosses into the
// sandbox.
const markerEnv = "SANDGATE_NSINIT"

// ctlFD is the init's end of the control socketpair (the first of ExtraFiles).
const ctlFD = 3

// IsInit reports whether this process was started by Start to be a sandbox's init.
func IsInit() bool { return os.Getenv(markerEnv) == "1" }

// init runs the sandbox init, before anything of the program that links this package
// (main, or a test binary's TestMain) gets to run, when the process was started as
// one. Start re-executes the running binary; were it left to main to call Main, a
// binary that forgot would run as itself inside the sandbox (a test binary would run
// its whole suite there, and start inits of its own). Everything Main uses is
// initialized by then: it needs only the standard library and x/sys.
func init() {
	if IsInit() {
		Main()
	}
}

// Main runs the sandbox init and exits; it never returns. Call it first thing in main
// (and in TestMain) when IsInit reports true. Its exit code is 0 after its control
// socket closed, 128+n after signal n, and 1 if the setup failed.
func Main() {
	os.Exit(runInit())
}

// initProc is the init's state. kids maps the pid of each live spawned process to its
// spawn id; mu is held across registration and the started frame, and by the reaper
// while it looks a child up and takes it out of kids (it reaps after), and the reaper
// leaves a child it does not know unreaped while a fork is under way (spawning), so a
// process is never reaped before its started frame is sent (the SCM_CREDENTIALS pid
// must still exist) and exit frames follow started ones.
type initProc struct {
	c    *conn
	cfg  Config
	kick *forkKick // a spawn forked: wakes the reaper if it found no children
	trim *idleTrim // a spawn forked: the heap is trimmed once spawns stop
	home *os.File  // the init's own cgroup.procs (Config.Cgroup), or nil
	// homeDir is the init's own cgroup directory (Config.Cgroup), or -1: what the
	// spawn path's probe clones into; closed after it.
	homeDir int
	// own is the spawn path of our own (clone_linux.go), or nil: the fallback
	// (ForkExec from the filtered thread). Set by the spawner thread before it serves.
	own *ownSpawn
	// lease is the lease the init holds (Config.Lease), or nil. Set by setup.
	lease *initLease
	uid   uint32 // the init's own ids, for SCM_CREDENTIALS
	gid   uint32
	paths pathCache // used by the spawner thread only
	pa    procAttrs // what procAttr builds, reused by each spawn (the spawner thread's)

	// ending is set by teardown before it kills everything: exits are no longer reported.
	ending atomic.Bool

	mu   sync.Mutex
	kids map[int]kid
	ids  map[uint64]int
	// spawning is set while the spawner forks outside mu, until it has registered the
	// child; spawnSeq counts the spawns that set it, and spawned (on mu) is broadcast
	// when it is cleared. The reaper leaves a child it does not know unreaped until the
	// spawn under way when it found it has ended: it may be that spawn's child.
	spawning bool
	spawnSeq uint64
	spawned  *sync.Cond
}

// kid is a live spawned process: its spawn id, whether it leads a session, and the
// pipe its status goes to (SpawnRequest.Status), or -1. A quiet kid (a NoWait spawn,
// which has a status pipe) gets no exit frame: the pipe is its only report.
type kid struct {
	id      uint64
	session bool
	status  int
	quiet   bool
}

// kidsSized is how many live spawned processes the init's tables are made for, so
// that the usual few, coming and going, never make them grow (an allocation, and
// garbage).
const kidsSized = 64

// homeFD is the init's own cgroup.procs when the config frame says so, and
// homeFD+1 its directory.
const homeFD = 4

func runInit() int {
	tuneMemory()
	// Signals first, so SIGTERM is never fatal by default (a Go pid 1 would exit 2
	// without running our teardown). Exits are not signals: the reaper waits for them
	// in waitid.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "nsinit: not pid 1 of a new pid namespace")
		return 1
	}
	defaultIgnoredSignals()
	// fds the server inherited without O_CLOEXEC (from its own parent) reached us the
	// same way; none may reach the sandbox.
	if err := unix.CloseRange(0, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintln(os.Stderr, "nsinit: failed to mark fds close-on-exec:", err)
		return 1
	}
	c := newBlockingConn(ctlFD, initRecvBuf)
	kick, err := newForkKick()
	if err != nil {
		_ = c.send(errorFrame(0, err), nil, nil)
		return 1
	}
	ip := &initProc{c: c, kick: kick, trim: newIdleTrim(), homeDir: -1,
		kids: make(map[int]kid, kidsSized), ids: make(map[uint64]int, kidsSized),
		uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	ip.spawned = sync.NewCond(&ip.mu)
	done := make(chan int, 1)
	if err := ip.setup(done); err != nil {
		_ = c.send(errorFrame(0, err), nil, nil)
		return 1
	}
	spareThreads(spareMs)
	if err := uncatchChildSignal(); err != nil {
		_ = c.send(errorFrame(0, err), nil, nil)
		return 1
	}
	go ip.reapLoop()
	// The ready frame's Code says which spawn path the init took (Init.SpawnPath).
	if err := c.send(&frame{Op: opReady, Code: int(ip.spawnPath())}, nil, nil); err != nil {
		return 1
	}
	select {
	case code := <-done:
		return ip.teardown(code)
	case s := <-sigs:
		return ip.teardown(128 + int(s.(syscall.Signal)))
	}
}

// setup reads the Config, builds the sandbox and starts the hardened spawner thread,
// which serves the control socket once the ready frame is sent and reports the exit
// code on done when it closes. An init that executes itself again once its root is
// built (reexec_linux.go) reads the Config, the second time, from the memory file it
// was handed, and builds nothing.
func (ip *initProc) setup(done chan<- int) error {
	st, again, err := reexecState()
	if err != nil {
		return err
	}
	if !again {
		fr, fds, _, err := ip.c.recv()
		if err != nil {
			return err
		}
		defer func() { closeFDs(fds) }() // those the exec below did not take
		if fr.Op != opConfig || fr.Config == nil {
			return fmt.Errorf("%w: expected a config frame, got %q", ErrProtocol, fr.Op)
		}
		st = setupState{Config: *fr.Config, Home: fr.Home, FreezeFD: fr.FreezeFD}
		if ip.cfg, err = st.Config.withDefaults(); err != nil {
			return err
		}
		// What the server had mounted at our start, before the pivot hides it. A
		// failed read only costs the exec.
		loops := true
		if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
			loops = hasLoopMount(info)
		}
		if err := setupRoot(ip.cfg, fds); err != nil {
			return err
		}
		if err := setupUTSNet(ip.cfg); err != nil {
			return err
		}
		if needsReexec(ip.cfg, loops) {
			closeFDs(fds) // attached: the exec would close them anyway
			fds = nil
			if err := reexec(st); err != nil {
				// A host whose loader is not among the entries bound into the root
				// (hostEntries): the sandbox runs, holding its copy of the server's
				// mounts until it ends, as before.
				fmt.Fprintln(os.Stderr, "nsinit: keeping the old root:", err)
			}
		}
	} else if ip.cfg, err = st.Config.withDefaults(); err != nil {
		return err
	}
	if st.Home {
		ip.home = os.NewFile(homeFD, "cgroup.procs")
		ip.homeDir = homeFD + 1
	}
	if ip.cfg.Lease {
		freeze := -1
		if st.FreezeFD > ctlFD {
			freeze = st.FreezeFD
		}
		if ip.lease, err = newInitLease(ip.cfg.ID, freeze, ip.cfg.LeaseUntil); err != nil {
			return err
		}
	}
	if err := unix.Chdir("/workspace"); err != nil {
		return fmt.Errorf("failed to chdir to /workspace: %w", err)
	}
	ready := make(chan error, 1)
	go ip.spawnLoop(ready, done)
	return <-ready
}

// serve serves requests, on the spawner thread, until the control socket closes or
// breaks, then reports the exit code on done. A spawn runs right here: the thread that
// read it forks it, with no hand-off to another thread on the way.
func (ip *initProc) serve(done chan<- int) {
	var y schedYield
	for {
		y.maybe(time.Now())
		fr, fds, err := ip.c.recvReused() // both valid until the next request
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
			ip.spawn(spawnJob{fr: fr, fds: fds})
		case opSignal:
			closeFDs(fds)
			ip.signal(fr)
		case opLease:
			closeFDs(fds)
			if ip.lease != nil {
				ip.lease.renew(fr.Lease)
			}
		default:
			closeFDs(fds)
			_ = ip.c.send(errorFrame(fr.ID, fmt.Errorf("%w: unknown op %q", ErrProtocol, fr.Op)), nil, nil)
		}
	}
}

// signal sends a signal to the process group of a live spawned process, and to the
// rest of its session if it leads one (a terminal's jobs are groups of their own).
func (ip *initProc) signal(fr *frame) {
	ip.mu.Lock()
	pid, ok := ip.ids[fr.Target]
	var err error
	if !ok {
		err = ErrExited
	} else {
		err = signalTree(pid, ip.kids[pid].session, syscall.Signal(fr.Sig))
	}
	ip.mu.Unlock()
	if err != nil {
		_ = ip.c.send(errorFrame(fr.ID, err), nil, nil)
		return
	}
	_ = ip.c.send(&frame{Op: opOK, ID: fr.ID}, nil, nil)
}

// signalTree sends sig to the group led by the spawned process pid and, if it leads a
// session (session), to every other process of the session. The caller holds mu
// while pid is in kids, or is the reaper with pid taken out of kids but not yet
// reaped: either way pid is unreaped and its ids cannot be reused meanwhile. A
// process started async may not have made its group yet (it does so before its
// exec): it gets the signal itself (SIGKILL at once; another stays blocked until just
// before the exec, where its default action applies).
func signalTree(pid int, session bool, sig syscall.Signal) error {
	err := unix.Kill(-pid, sig)
	if errors.Is(err, unix.ESRCH) {
		err = unix.Kill(pid, sig)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("failed to signal process group %d: %w", pid, err)
	}
	if session {
		for _, p := range procfs.List("/proc") {
			if p.Session == pid && p.Pgrp != pid {
				_ = unix.Kill(p.PID, sig)
			}
		}
	}
	return nil
}

// teardown kills everything in the sandbox and returns code. kill(-1) from pid 1
// reaches every other process of the namespace; the kernel would also kill them once
// pid 1 exits, this just does not leave it to that.
//
// ending is set first, so the reaper reports none of the deaths it causes: a status
// pipe whose process outlived its init ends without a status.
func (ip *initProc) teardown(code int) int {
	ip.ending.Store(true)
	_ = unix.Kill(-1, unix.SIGKILL)
	return code
}
