package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// sandboxCgroup is one sandbox's groups: <own>/sandgate-<scope>/<id>.<random> in the
// cgroup2 hierarchy (the containment: one child group per process tree) and in each v1
// hierarchy of v1Controllers (the limits). The sandbox's primary directory (the cgroup2
// one, else the first v1 one) is flock'd while the sandbox lives, so that Sweep tells a
// live sandbox of another process from a leftover of a dead one: the kernel drops the
// lock when its holder dies, kill -9 included.
//
// A nil *sandboxCgroup is a sandbox without cgroups: its methods do nothing. The
// methods are safe for concurrent use.
type sandboxCgroup struct {
	name string            // <id>.<random>
	v2   string            // the cgroup2 directory; "" without containment
	v1   map[string]string // controller → directory
	lock *os.File          // the primary directory, flock'd
	dir  int               // lock's fd: trees' groups are made relative to it
	// nest, unless "", is the group below v2 that trees' groups are made in instead
	// (nestTrees), open as nestFD.
	nest   string
	nestFD int
	next   atomic.Int64 // the last tree number

	// procs are the v1 groups' cgroup.procs, open for writing from creation to
	// destroy, so that entering a process is one write per hierarchy (no path lookup,
	// open or close on the start path).
	procs []v1Procs

	// mu is held for writing by destroy, and for reading while a tree's group is made
	// and while procs are written, so destroy never races either (nor closes an fd in
	// use).
	mu        sync.RWMutex
	destroyed bool

	spareMu sync.Mutex   // guards spare; taken under mu (read or write)
	spare   []spareGroup // emptied tree groups kept for the next trees
	killed  atomic.Bool  // KillAll wrote the sandbox's cgroup.kill

	owner *cgroupOwner // whom new tree groups are delegated to (delegate), or nil; under mu
}

// v1Procs is one v1 group's cgroup.procs, open for writing.
type v1Procs struct {
	ctl string
	fd  int
}

// newSandboxCgroup makes the groups of sandbox id in scope and applies lim. It returns
// nil, and no error, when the machine has no cgroups for it and lim asks for nothing.
func newSandboxCgroup(scope, id string, lim Limits) (*sandboxCgroup, error) {
	h := hostCgroups()
	if h.v2 == "" && len(h.v1) == 0 {
		if lim.any() {
			return nil, fmt.Errorf("%w: %w", ErrNoCgroups, h.noV2)
		}
		return nil, nil
	}
	var err error
	for range 3 { // a Sweep of another process of the same scope may race us: retry
		var c *sandboxCgroup
		c, err = makeSandboxCgroup(h, scopeDirName(scope), cgroupName(id)+"."+randomHex(4))
		if err == nil {
			if err = c.setLimits(lim); err != nil {
				_ = c.destroy()
				return nil, err
			}
			liveCgroups.Store(c, struct{}{})
			return c, nil
		}
		if !errors.Is(err, errLockLost) && !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return nil, fmt.Errorf("failed to create cgroup: %w", err)
}

// liveCgroups holds every sandboxCgroup of this process not yet destroyed, for
// KillAll.
var liveCgroups sync.Map // *sandboxCgroup → struct{}

// killAllCgroups sends SIGKILL to every process of every live sandbox's cgroup2 group.
func killAllCgroups() {
	liveCgroups.Range(func(k, _ any) bool {
		if c := k.(*sandboxCgroup); c.v2 != "" {
			c.killed.Store(true) // its tree groups were killed too: none may be reused
			_ = writeCgroupFile(c.v2, "cgroup.kill", "1")
		}
		return true
	})
}

// errLockLost says a group was swept away while it was being made.
var errLockLost = errors.New("runtime: cgroup swept while being made")

// makeSandboxCgroup makes the primary directory and locks it, then the others.
func makeSandboxCgroup(h *cgroupHost, scopeName, name string) (c *sandboxCgroup, err error) {
	c = &sandboxCgroup{name: name, v1: map[string]string{}, dir: -1, nestFD: -1}
	defer func() {
		if err != nil {
			_ = c.destroy()
		}
	}()
	var dirs []string
	if h.v2 != "" {
		c.v2 = filepath.Join(h.v2, scopeName, name)
		dirs = append(dirs, c.v2)
	}
	for _, ctl := range v1Controllers {
		if own, ok := h.v1[ctl]; ok {
			c.v1[ctl] = filepath.Join(own, scopeName, name)
			dirs = append(dirs, c.v1[ctl])
		}
	}
	for i, d := range dirs {
		if err := mkdirScope(filepath.Dir(d), h); err != nil {
			return c, err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return c, err
		}
		if i == 0 {
			if c.lock, err = lockDir(d); err != nil {
				return c, err
			}
			c.dir = int(c.lock.Fd())
		}
	}
	for _, ctl := range v1Controllers {
		if d := c.v1[ctl]; d != "" {
			fd, err := unix.Open(filepath.Join(d, "cgroup.procs"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return c, os.NewSyscallError("open "+ctl+" cgroup.procs", err)
			}
			c.procs = append(c.procs, v1Procs{ctl: ctl, fd: fd})
		}
	}
	return c, nil
}

// mkdirScope makes a scope's group if it is missing; in a cgroup2 hierarchy it also
// hands the v2 controllers the server may use down to the sandboxes.
func mkdirScope(dir string, h *cgroupHost) error {
	err := os.Mkdir(dir, 0o755)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case err != nil:
		return err
	}
	if h.v2 != "" && filepath.Dir(dir) == h.v2 {
		var enable []string
		for c := range h.owned {
			enable = append(enable, "+"+c)
		}
		if len(enable) > 0 {
			_ = writeCgroupFile(dir, "cgroup.subtree_control", strings.Join(enable, " "))
		}
	}
	return nil
}

// lockDir opens dir and takes its flock, failing with errLockLost when another process
// holds it or dir was removed meanwhile.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errLockLost
		}
		return nil, os.NewSyscallError("flock", err)
	}
	if !fileExists(filepath.Join(dir, "cgroup.procs")) {
		f.Close()
		return nil, errLockLost
	}
	return f, nil
}

// setLimits writes lim to every hierarchy that has the controller; a limit that no
// hierarchy can carry is an error wrapping ErrNoCgroups.
func (c *sandboxCgroup) setLimits(lim Limits) error {
	if c == nil {
		if lim.any() {
			return ErrNoCgroups
		}
		return nil
	}
	mem, pids, quota := "-1", "max", "-1"
	memV2, cpuV2 := "max", "max 100000"
	// The weight follows the quota, so that sandboxes competing for the CPU get it in
	// proportion to their budgets (1000 millis is the default weight of a group).
	shares, weight := "1024", "100"
	if lim.MemoryBytes > 0 {
		mem = strconv.FormatInt(lim.MemoryBytes, 10)
		memV2 = mem
	}
	if lim.Pids > 0 {
		pids = strconv.Itoa(lim.Pids)
	}
	if lim.CPUMillis > 0 {
		quota = strconv.Itoa(lim.CPUMillis * 100) // of a 100 ms period
		cpuV2 = quota + " 100000"
		shares = strconv.Itoa(max(2, lim.CPUMillis*1024/1000))
		weight = strconv.Itoa(min(10000, max(1, lim.CPUMillis/10)))
	}
	sets := []struct {
		ctl, v1File, v1Val, v2File, v2Val string
		want                              bool
	}{
		{"memory", "memory.limit_in_bytes", mem, "memory.max", memV2, lim.MemoryBytes > 0},
		{"pids", "pids.max", pids, "pids.max", pids, lim.Pids > 0},
		{"cpu", "cpu.cfs_quota_us", quota, "cpu.max", cpuV2, lim.CPUMillis > 0},
		{"cpu", "cpu.shares", shares, "cpu.weight", weight, false},
	}
	for _, s := range sets {
		switch {
		case c.v1[s.ctl] != "":
			if err := writeCgroupFile(c.v1[s.ctl], s.v1File, s.v1Val); err != nil {
				return err
			}
		case c.v2 != "" && fileExists(filepath.Join(c.v2, s.v2File)):
			if err := writeCgroupFile(c.v2, s.v2File, s.v2Val); err != nil {
				return err
			}
		case s.want:
			return fmt.Errorf("%w: no %s controller", ErrNoCgroups, s.ctl)
		}
	}
	return nil
}

// startIn runs start, which starts cmd (cmd.Start, or a PTY start), and then writes
// the leader's pid to the sandbox's v1 groups (clone3 places it only in the cgroup2
// one). That leaves a window, from the start until the write (microseconds, a few
// milliseconds on a loaded machine), in which the leader runs, and may fork, outside
// the limits. Holding the child frozen until then would close it, but Go's fork
// (vfork, a raw syscall) would hold a P, and block the garbage collector's
// stop-the-world, for as long: a deadlock. When the pid cannot be written the
// leader is killed and reaped, and the error returned.
func (c *sandboxCgroup) startIn(t *treeCgroup, cmd *exec.Cmd, start func() error) error {
	if err := start(); err != nil || c == nil || len(c.v1) == 0 {
		return err
	}
	if err := c.enter(cmd.Process.Pid); err != nil {
		t.kill()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// enter moves the just-started process pid into the sandbox's v1 groups (clone3 can
// only place it in the cgroup2 one). Its children, forked after, inherit them. A
// process that already exited is not an error.
func (c *sandboxCgroup) enter(pid int) error {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.destroyed {
		return ErrClosed
	}
	b := strconv.AppendInt(make([]byte, 0, 12), int64(pid), 10)
	for _, p := range c.procs {
		if err := writeControl(p.fd, b); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("failed to enter %s cgroup: %w", p.ctl, os.NewSyscallError("write", err))
		}
	}
	return nil
}

// usage reads the memory and pids counters.
func (c *sandboxCgroup) usage() (Usage, error) {
	u := Usage{MemoryBytes: -1}
	var err error
	switch {
	case c.v1["memory"] != "":
		u.MemoryBytes, err = readCgroupInt(c.v1["memory"], "memory.usage_in_bytes")
	case c.v2 != "" && fileExists(filepath.Join(c.v2, "memory.current")):
		u.MemoryBytes, err = readCgroupInt(c.v2, "memory.current")
	}
	if err != nil {
		return Usage{}, err
	}
	var n int64
	switch {
	case c.v1["pids"] != "":
		n, err = readCgroupInt(c.v1["pids"], "pids.current")
	case c.v2 != "" && fileExists(filepath.Join(c.v2, "pids.current")):
		n, err = readCgroupInt(c.v2, "pids.current")
	case c.v2 != "":
		n, err = countProcs(c.v2)
	default:
		n, err = countProcs(c.v1[v1Controllers[0]])
	}
	u.Pids = int(n)
	return u, err
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
