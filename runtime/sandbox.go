package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Config configures the runtime of one sandbox. A nil *Config means DefaultConfig.
type Config struct {
	// Dir is the workspace directory, the default cwd and HOME of every process. It is
	// created (0o755, with parents) if missing and made absolute by New. Required.
	Dir string
	// Env is the sandbox's environment, overlaid on a small base (PATH, HOME=Dir,
	// LANG=C.UTF-8, and USER on the local driver; the namespace driver's PATH is a
	// default, not the server's).
	Env map[string]string
	// MaxProcesses caps the running processes and terminals started with Start and
	// StartTerminal; exec calls and session shells do not count. 0 means no cap.
	MaxProcesses int
	// OutputBufferBytes is the size of each process's output ring and the default cap
	// of each exec output stream. Default 1 MiB.
	OutputBufferBytes int
	// KillGrace is how long Kill, Remove and Close wait after SIGTERM before SIGKILL.
	// Default 2 s.
	KillGrace time.Duration
	// Driver builds the processes. Default LocalDriver.
	Driver Driver

	// ID names the sandbox's cgroups and is what Sweep reports; default the base name
	// of Dir.
	ID string
	// Scope is the node the sandbox belongs to: its cgroups are made under
	// sandgate-<Scope> in the server's own groups, and Sweep(Scope) at the node's next
	// start ends what a crash left there. Nodes sharing a host need scopes of their
	// own. Default "default".
	Scope string
	// MemoryBytes, Pids and CPUMillis are the sandbox's limits (see Limits); 0 means
	// none. New fails with ErrNoCgroups when a limit is set and the machine has no
	// cgroup controller for it.
	MemoryBytes int64
	Pids        int
	CPUMillis   int
	// Network overrides the namespace driver's network for this sandbox: "none",
	// "loopback" or "host"; "" keeps the driver's. The local driver shares the
	// host's network whatever it says.
	Network string
	// NoCgroups runs the sandbox without cgroups even where the machine has them: no
	// limits, and process trees are process groups only (see Containment).
	NoCgroups bool
}

// DefaultConfig returns the defaults that New applies to zero fields. Dir has no
// default.
func DefaultConfig() Config {
	return Config{OutputBufferBytes: 1 << 20, KillGrace: 2 * time.Second, Driver: LocalDriver{}}
}

// DefaultKeep is how long an exited process stays listed when StartOptions.Keep is 0.
const DefaultKeep = 10 * time.Minute

// Sandbox runs the processes of one sandbox in its workspace directory.
//
// A Sandbox is safe for concurrent use. It owns the goroutines that watch its processes;
// Close kills every process tree and waits for them.
type Sandbox struct {
	cfg     Config
	dir     string // absolute
	realDir string // dir with symlinks resolved, for cwd confinement
	env     map[string]string
	envList []string // env as a list, reused by calls without env of their own

	wg sync.WaitGroup // watcher goroutines of processes and exec calls

	mu        sync.Mutex
	closed    bool
	closeDone chan struct{}
	procs     map[string]*Process
	order     []*Process // oldest first
	pending   map[string]bool
	running   int
	execs     map[*procGroup]struct{}
	closers   map[*closer]struct{}

	cg    *sandboxCgroup // nil without cgroups
	h     host           // the driver's, for this sandbox
	guest string         // the workspace as the processes see it
	polls execPolls      // epoll instances for execs to reuse; closed by Close
}

// closer is a hook run by Sandbox.Close; see onClose.
type closer struct{ fn func(context.Context) error }

// New makes the runtime of one sandbox: it validates cfg, fills defaults, creates the
// workspace directory and, where the machine has cgroups, the sandbox's groups (see
// Containment), which only Close removes. It starts nothing.
func New(cfg *Config) (*Sandbox, error) {
	s, err := newSandbox(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create sandbox runtime: %w", err)
	}
	return s, nil
}

func newSandbox(cfg *Config) (*Sandbox, error) {
	if platformErr != nil {
		return nil, platformErr
	}
	c := DefaultConfig()
	if cfg != nil {
		c.Dir, c.Env, c.MaxProcesses = cfg.Dir, cfg.Env, cfg.MaxProcesses
		if cfg.OutputBufferBytes != 0 {
			c.OutputBufferBytes = cfg.OutputBufferBytes
		}
		if cfg.KillGrace != 0 {
			c.KillGrace = cfg.KillGrace
		}
		if cfg.Driver != nil {
			c.Driver = cfg.Driver
		}
		c.ID, c.Scope, c.NoCgroups, c.Network = cfg.ID, cfg.Scope, cfg.NoCgroups, cfg.Network
		c.MemoryBytes, c.Pids, c.CPUMillis = cfg.MemoryBytes, cfg.Pids, cfg.CPUMillis
	}
	switch {
	case c.Dir == "":
		return nil, fmt.Errorf("%w: Dir is required", ErrInvalid)
	case c.MaxProcesses < 0, c.OutputBufferBytes < 0, c.KillGrace < 0:
		return nil, fmt.Errorf("%w: negative limit", ErrInvalid)
	case c.NoCgroups && c.limits().any():
		return nil, fmt.Errorf("%w: limits need cgroups", ErrInvalid)
	}
	if err := c.limits().validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	markCloexec()
	guest := c.Driver.guestDir(dir)
	env := make(map[string]string, len(c.Env)+4)
	_, isolated := c.Driver.(NamespaceDriver)
	for k, v := range overlay(baseEnv(guest, !isolated), c.Env) {
		env[k] = v
	}
	c.Env = env
	if c.ID == "" {
		c.ID = filepath.Base(dir)
	}
	var cg *sandboxCgroup
	if !c.NoCgroups {
		if cg, err = newSandboxCgroup(c.Scope, c.ID, c.limits()); err != nil {
			return nil, err
		}
	}
	s := &Sandbox{
		cg: cg, guest: guest,
		cfg: c, dir: dir, realDir: real, env: env, envList: envList(env),
		closeDone: make(chan struct{}),
		procs:     map[string]*Process{},
		pending:   map[string]bool{},
		execs:     map[*procGroup]struct{}{},
		closers:   map[*closer]struct{}{},
	}
	ctx, cancel := context.WithTimeout(context.Background(), driverOpenTimeout)
	defer cancel()
	if s.h, err = c.Driver.open(ctx, s); err != nil {
		_ = cg.destroy()
		return nil, fmt.Errorf("failed to open the %s driver: %w", c.Driver.Name(), err)
	}
	return s, nil
}

// driverOpenTimeout bounds how long New waits for the driver (the namespace driver
// starts the sandbox's init: milliseconds, unless the machine is thrashing).
const driverOpenTimeout = 30 * time.Second

// Driver returns the name of the driver the sandbox's processes run under.
func (s *Sandbox) Driver() string { return s.cfg.Driver.Name() }

// GuestDir returns the workspace directory as the sandbox's processes see it (what
// exec of pwd prints there by default): Dir for the local driver, /workspace for the
// namespace driver.
func (s *Sandbox) GuestDir() string { return s.guest }

// guestPath returns how the processes see p, a path of the server's inside the
// workspace or under the host's root (see host.root); other paths are returned as
// they are.
func (s *Sandbox) guestPath(p string) string {
	switch {
	case s.guest == s.dir:
		return p
	case within(s.dir, p):
		return filepath.Join(s.guest, strings.TrimPrefix(p, s.dir))
	}
	if root := s.h.root(); root != "" && within(root, p) {
		return filepath.Join("/", strings.TrimPrefix(p, root))
	}
	return p
}

// Dir returns the absolute workspace directory.
func (s *Sandbox) Dir() string { return s.dir }

// environ returns the sandbox env overlaid with extra layers, as a list.
func (s *Sandbox) environ(layers ...map[string]string) []string {
	m := overlay(s.env, layers...)
	if len(m) == len(s.env) && sameMap(m, s.env) {
		return s.envList
	}
	return envList(m)
}

func sameMap(a, b map[string]string) bool {
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// resolveCwd turns a cwd option (relative to Dir, or absolute inside Dir; "" is Dir)
// into an absolute directory, rejecting anything that resolves outside the workspace,
// through ".." or symlinks.
func (s *Sandbox) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return s.dir, nil
	}
	if strings.ContainsRune(cwd, 0) {
		return "", fmt.Errorf("%w: bad cwd", ErrInvalid)
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.dir, p)
	}
	p = filepath.Clean(p)
	if s.guest != s.dir && !within(s.dir, p) && within(s.guest, p) {
		p = filepath.Join(s.dir, strings.TrimPrefix(p, s.guest)) // as the processes spell it
	}
	if !within(s.dir, p) && !within(s.realDir, p) {
		return "", fmt.Errorf("%w: cwd %q is outside the workspace", ErrInvalid, cwd)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: cwd %q: %v", ErrInvalid, cwd, errors.Unwrap(err))
	}
	if !within(s.realDir, real) {
		return "", fmt.Errorf("%w: cwd %q is outside the workspace", ErrInvalid, cwd)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: cwd %q is not a directory", ErrInvalid, cwd)
	}
	return p, nil
}

// within reports whether the clean absolute path p is dir or below it.
func within(dir, p string) bool {
	// As strings.HasPrefix(p, dir+"/"), without making that string on every exec.
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir || dir == "/"
}

// commandArgv checks that exactly one of command and argv is set and returns the argv to
// run: command is run by /bin/sh -c.
func commandArgv(command string, argv []string) ([]string, error) {
	switch {
	case command != "" && len(argv) > 0:
		return nil, fmt.Errorf("%w: both command and argv", ErrInvalid)
	case command != "":
		return []string{"/bin/sh", "-c", command}, nil
	case len(argv) == 0 || argv[0] == "":
		return nil, fmt.Errorf("%w: command or argv is required", ErrInvalid)
	}
	return argv, nil
}

// Process returns the process with the given id, running or still kept after exit.
func (s *Sandbox) Process(id string) (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.procs[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
}

// Processes lists the processes, oldest first: running ones and exited ones within
// their Keep time.
func (s *Sandbox) Processes() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.order...)
}

// Running returns the number of running processes counted against MaxProcesses.
func (s *Sandbox) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Remove kills the process tree of id (SIGTERM, SIGKILL after KillGrace), waits for it
// to exit and drops its record.
func (s *Sandbox) Remove(ctx context.Context, id string) error {
	p, err := s.Process(id)
	if err != nil {
		return err
	}
	if err := p.Kill(ctx); err != nil {
		return fmt.Errorf("failed to remove process: %w", err)
	}
	s.drop(p)
	return nil
}

// drop forgets p.
func (s *Sandbox) drop(p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[p.id] != p {
		return
	}
	delete(s.procs, p.id)
	for i, q := range s.order {
		if q == p {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	if p.keep != nil {
		p.keep.Stop()
	}
}

// onClose registers fn to run when the sandbox closes, after its process trees were
// signalled; Close waits for it. The returned func unregisters it. It reports false,
// and registers nothing, once the sandbox is closed. Sessions use it.
func (s *Sandbox) onClose(fn func(context.Context) error) (unregister func(), ok bool) {
	c := &closer{fn: fn}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.closers[c] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.closers, c)
	}, true
}

// Close kills every process tree (SIGTERM, SIGKILL after KillGrace), every exec call's
// tree and every session, and waits for them; then, with cgroups, it kills whatever is
// left in the sandbox's cgroup and removes its groups. Later calls return nil at once; a
// concurrent call waits for the first to finish. After Close, other methods return
// ErrClosed.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		select {
		case <-s.closeDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.closed = true
	procs := append([]*Process(nil), s.order...)
	execs := make([]*procGroup, 0, len(s.execs))
	for g := range s.execs {
		execs = append(execs, g)
	}
	closers := make([]*closer, 0, len(s.closers))
	for c := range s.closers {
		closers = append(closers, c)
	}
	s.mu.Unlock()
	defer close(s.closeDone)

	for _, g := range execs {
		_ = g.signal(sigKILL)
	}
	errs := make([]error, len(procs)+len(closers))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Kill(ctx) })
	}
	for i, c := range closers {
		wg.Go(func() { errs[len(procs)+i] = c.fn(ctx) })
	}
	wg.Wait()
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	s.mu.Lock()
	for _, p := range s.order {
		if p.keep != nil {
			p.keep.Stop()
		}
	}
	s.mu.Unlock()
	s.polls.close()
	if err := s.h.close(); err != nil {
		errs = append(errs, err)
	}
	// Whatever left every tree's group (a process that escaped its own tree's group
	// cannot leave the sandbox's) dies here, and the groups go.
	if err := s.cg.destroy(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to close sandbox: %w", err)
	}
	return nil
}
