package runtime

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"
)

// SessionOptions configures a new session.
type SessionOptions struct {
	// ID is the session's id; "" makes one ("sess_" + 16 hex digits).
	ID string
	// Cwd is where the shell starts: relative to the workspace, or absolute inside it.
	// "" is the workspace itself.
	Cwd string
	// Env is overlaid on the sandbox environment.
	Env map[string]string
	// Shell is the shell to run; "" is "bash". Only bash is supported: the framing of
	// commands uses bash features.
	Shell string
	// Snapshot, when set, makes the session start from this cwd and exported env
	// instead of Cwd and Env (rehydration after hibernation or a move). A snapshot cwd
	// that no longer exists falls back to Cwd.
	Snapshot *SessionSnapshot
}

// SessionSnapshot is the state of a session that survives its shell: the working
// directory and the exported variables.
type SessionSnapshot struct {
	Cwd string
	Env map[string]string
}

// SessionCommand is one command for Session.Exec.
type SessionCommand struct {
	// Command is bash source; it runs in the session's shell. It must not hold NUL.
	Command string
	// Cwd, when set, is the directory for this call only: relative to the workspace or
	// absolute inside it. The shell returns to its own cwd afterwards.
	Cwd string
	// Env is set for this call only; the previous values come back afterwards.
	Env map[string]string
	// Timeout ends the command: its whole tree and the shell are killed and the session
	// is dead. 0 is none.
	Timeout time.Duration
	// OutputLimit caps each of stdout and stderr; 0 is the session's default (1 MiB
	// unless the sandbox says otherwise). Bytes beyond it are read and dropped.
	OutputLimit int
}

// SessionStatus is what a session is doing.
type SessionStatus string

// Session statuses.
const (
	SessionReady SessionStatus = "ready"
	SessionBusy  SessionStatus = "busy"
	SessionDead  SessionStatus = "dead"
)

// SessionInfo describes a session.
type SessionInfo struct {
	ID            string
	Status        SessionStatus
	Cwd           string
	Env           map[string]string
	CreatedAt     time.Time
	LastCommandAt *time.Time
	Commands      int
	DeadReason    string
	// SnapshotError, when set, says why the snapshot of the last command was not
	// taken (its ExecResult.SnapshotErr): the session's cwd and env are as of an
	// earlier command. Cwd and Env above are that earlier snapshot.
	SnapshotError string
}

// sessionConfig is what a Sandbox hands newSession.
type sessionConfig struct {
	// Options are the caller's options.
	Options SessionOptions
	// Dir is the workspace directory (absolute).
	Dir string
	// Env is the sandbox environment (base variables plus Config.Env); Options.Env is
	// overlaid on it.
	Env map[string]string
	// OutputLimit is the default cap per stream; 0 is 1 MiB.
	OutputLimit int
	// cg is the sandbox's cgroups, where the shell's tree gets a group; nil: none.
	cg *sandboxCgroup
	// sb is the sandbox whose driver starts the shell.
	sb *Sandbox
	// TempDir is where the session's private directory (command file and FIFOs) is
	// made; "" is /dev/shm when usable (a tmpfs: making FIFOs there is several times
	// cheaper than on a disk file system, see BENCHMARKS.md, "Runtime: shell sessions"), else
	// os.TempDir().
	TempDir string
}

const (
	sessDefaultOutputLimit = 1 << 20
	// sessStartTimeout bounds how long a new shell may take to report ready.
	sessStartTimeout = 30 * time.Second
	// sessDrainWait bounds how long a finished command's output is followed for EOF
	// when something it left in the background still holds stdout or stderr.
	sessDrainWait = 25 * time.Millisecond
	// sessExitWait bounds how long a shell whose control fd closed may take to exit.
	sessExitWait = 5 * time.Second
)

// Session is a persistent bash that runs commands one at a time.
//
// Concurrency: all methods are safe for concurrent use. Exec calls are served in the
// order they arrive, by one goroutine the session owns. Close stops it.
//
// Lifecycle:
//  1. newSession starts bash in its own process group, with fd 3 as the control pipe,
//     sends it the helper functions and waits for the first frame.
//  2. Each Exec writes the command to a file the shell sources, with stdout and stderr
//     on two fresh FIFOs; completion, status, cwd and exported env come back as a frame
//     on the control fd, marked with a random nonce the command never sees.
//  3. A timeout, an exit of the shell or Close kills the shell's tree and makes the
//     session dead; later Execs return an error wrapping ErrSessionDead.
//  4. Close kills what is left, stops the goroutines and removes the private directory.
//     Call it for dead sessions too.
//
// Caveats, all following from "the command runs in the shell itself":
//   - Jobs a command leaves in the background keep running, but the command's stdout
//     and stderr are closed once it is reported: later writes there fail (SIGPIPE).
//     Redirect their output, or start a process instead.
//   - `set -e` makes the next failing command exit the shell (the session dies), as in
//     a terminal; `set -x` traces go to the command's stderr.
//   - The snapshot (cwd and exported env) is taken after a command only while the env
//     is within MaxEnvVars, MaxEnvValueBytes and MaxEnvBytes; past them the command's
//     result carries SnapshotErr and the previous snapshot stays, so what a session is
//     rehydrated from is always bounded. The control bytes of one frame held in memory
//     are bounded too (session_frame.go), however much the command exports.
//   - The shell holds readonly helpers named __sg_f, __sg_pre, __sg_post and __sg_d.
//     Aliases cannot break the framing, nor can functions named like builtins, except
//     functions named `builtin` or `.`: with those the frame never comes and the
//     command runs until its timeout.
type Session struct {
	id        string
	dir       string
	limit     int
	createdAt time.Time

	l      leader
	pid    int
	cg     *sandboxCgroup // the sandbox's cgroups; nil without
	tree   *treeCgroup    // the shell's tree's cgroup; nil without containment
	stdin  *os.File
	ctl    *os.File
	tmp    string
	sb     *Sandbox      // whose driver runs the shell, and which maps its paths
	ctlCh  chan []byte   // control bytes; closed at EOF
	kick   chan struct{} // a request was queued
	exited chan struct{} // closed once the shell is reaped

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	reapMu sync.Mutex // held while the shell's pid is signalled or reaped
	reaped bool
	state  *waitStatus

	framer sessFramer // owned by whoever reads ctlCh: newSession, then the worker

	mu         sync.Mutex
	afterClose func() // set by the owner; run once by Close
	closed     bool   // Close has finished
	queue      []*sessReq
	running    bool
	dead       string
	snap       SessionSnapshot
	snapErr    error // why the last command's snapshot was not taken; nil if it was
	commands   int
	lastAt     *time.Time
}

type sessReq struct {
	cmd  SessionCommand
	cwd  string // resolved per-call cwd
	done chan sessResult
}

type sessResult struct {
	res ExecResult
	err error
}

// newSession starts a session's shell and waits until it is ready. Its errors are not
// wrapped: Sandbox.NewSession says "failed to start session" once.
func newSession(ctx context.Context, cfg sessionConfig) (*Session, error) {
	o := cfg.Options
	id := o.ID
	if id == "" {
		id = "sess_" + sessRandHex(8)
	}
	sb := cfg.sb
	root := sb.h.root()
	shell, err := sessShell(o.Shell, root == "")
	if err != nil {
		return nil, err
	}
	cwd, err := sessResolveCwd(cfg.Dir, sb.guest, o.Cwd)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	maps.Copy(env, cfg.Env)
	maps.Copy(env, o.Env)
	if o.Snapshot != nil {
		// The snapshot's cwd is the shell's own: a path as the processes see it,
		// or a server path of the workspace saved before the sandbox had its own
		// file system.
		if p, ok := sb.snapshotDir(o.Snapshot.Cwd); ok {
			cwd = p
		}
		env = maps.Clone(o.Snapshot.Env)
		delete(env, "SHLVL") // bash adds one on start; keep rehydration stable
	}
	spelt := o.Cwd
	if spelt == "" {
		spelt = cwd
	}
	if err := sessCheckDir(cwd, spelt); err != nil {
		return nil, err
	}
	env["PWD"] = sb.guestPath(cwd)
	envList, err := sessEnvList(env)
	if err != nil {
		return nil, err
	}
	limit := cfg.OutputLimit
	if limit <= 0 {
		limit = sessDefaultOutputLimit
	}
	tmpDir := cfg.TempDir
	if root != "" {
		tmpDir = root + "/dev/shm" // the sandbox's own tmpfs, which its shell can see
	}
	var tmp string
	err = sessAsOwner(sb, func() (err error) {
		tmp, err = sessMkdirTemp(tmpDir)
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &Session{
		id: id, dir: cfg.Dir, limit: limit, createdAt: time.Now(), tmp: tmp,
		ctlCh: make(chan []byte, 16), kick: make(chan struct{}, 1),
		exited: make(chan struct{}), closing: make(chan struct{}), cg: cfg.cg, sb: sb,
	}
	if err := s.start(shell, cwd, envList); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := s.handshake(ctx); err != nil {
		_ = s.Close(context.Background())
		return nil, err
	}
	s.wg.Add(1)
	go s.work()
	return s, nil
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Info describes the session now.
func (s *Session) Info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SessionReady
	switch {
	case s.dead != "":
		st = SessionDead
	case s.running:
		st = SessionBusy
	}
	var last *time.Time
	if s.lastAt != nil {
		t := *s.lastAt
		last = &t
	}
	in := SessionInfo{
		ID: s.id, Status: st, Cwd: s.snap.Cwd, Env: maps.Clone(s.snap.Env),
		CreatedAt: s.createdAt, LastCommandAt: last, Commands: s.commands, DeadReason: s.dead,
	}
	if s.snapErr != nil {
		in.SnapshotError = s.snapErr.Error()
	}
	return in
}

// Snapshot returns the cwd and exported env as of the last finished command.
func (s *Session) Snapshot() SessionSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SessionSnapshot{Cwd: s.snap.Cwd, Env: maps.Clone(s.snap.Env)}
}

// Close kills the shell and everything it started, stops the session's goroutines
// and removes its private directory. Queued and running Execs return an error wrapping
// ErrSessionDead. It is idempotent; it returns ctx.Err() if ctx ends before the
// goroutines are done (they still finish).
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.markDead("session closed")
		close(s.closing)
		s.killTree()
		s.stdin.Close()
		s.ctl.Close()
	})
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := os.RemoveAll(s.tmp)
	s.mu.Lock()
	fn := s.afterClose
	s.afterClose, s.closed = nil, true
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
	return err
}

// setAfterClose registers fn to run once when Close has finished (at once if it has);
// the Sandbox uses it to forget the session.
func (s *Session) setAfterClose(fn func()) {
	s.mu.Lock()
	if !s.closed {
		s.afterClose = fn
		fn = nil
	}
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// markDead records why the session died; the first reason wins.
func (s *Session) markDead(reason string) {
	s.mu.Lock()
	if s.dead == "" {
		s.dead = reason
	}
	s.mu.Unlock()
}

func (s *Session) deadErrLocked() error {
	return fmt.Errorf("%w: %s", ErrSessionDead, s.dead)
}
