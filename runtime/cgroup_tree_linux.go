package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSpare bounds the emptied tree groups a sandbox keeps for reuse; each holds four
// fds. With 4, eight concurrent execs still made (and later removed) a group for about
// one exec in sixteen, each mkdir and rmdir of a cgroup costing the server ~100 µs of
// CPU (BENCHMARKS.md, "#14, third pass").
const maxSpare = 8

// spareGroup is an emptied tree group, open, kept for the next tree. Cloning into a
// group that had a process before was 0.1 to 0.4 ms faster than into a new one on the
// 2-core VM (measured, per start), and reuse saves the mkdir and the rmdir: with it,
// exec of true went from about 1.25x of its cost without cgroups to about 1.04x
// (BenchmarkExecTrueCgroups, interleaved runs).
type spareGroup struct {
	dir        string
	fd, events int
	procs      *os.File // its cgroup.procs, or nil (procsFile)
	dirf       *os.File // a copy of fd as a file, or nil (dirFile)
}

func (g spareGroup) close() {
	if g.procs != nil {
		_ = g.procs.Close()
	}
	if g.dirf != nil {
		_ = g.dirf.Close()
	}
	_ = unix.Close(g.events)
	_ = unix.Close(g.fd)
}

// newTree makes the cgroup2 group of one process tree, or reuses an emptied one. It
// returns nil (trees are then process groups only) for a sandbox without containment.
func (c *sandboxCgroup) newTree() (*treeCgroup, error) {
	if c == nil || c.v2 == "" {
		return nil, nil
	}
	// Under mu, so that destroy, which holds it, never races a group being made, and
	// c.dir (the v2 directory, the primary one) stays open meanwhile.
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.destroyed {
		return nil, ErrClosed
	}
	if t := c.reuseLocked(); t != nil {
		return t, nil
	}
	parent, parentDir := c.dir, c.v2
	if c.nest != "" {
		parent, parentDir = c.nestFD, c.nest
	}
	name := "t" + strconv.FormatInt(c.next.Add(1), 10)
	if err := unix.Mkdirat(parent, name, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create process cgroup: %w", os.NewSyscallError("mkdir", err))
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
		return nil, fmt.Errorf("failed to open process cgroup: %w", os.NewSyscallError("open", err))
	}
	if o := c.owner; o != nil {
		if err := unix.Fchownat(fd, "cgroup.procs", o.uid, o.gid, 0); err != nil {
			_ = unix.Close(fd)
			_ = unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
			return nil, fmt.Errorf("failed to delegate process cgroup: %w", os.NewSyscallError("fchownat", err))
		}
	}
	return &treeCgroup{c: c, dir: filepath.Join(parentDir, name), fd: fd, events: -1}, nil
}

// reuseLocked returns a tree on a spare group, or nil. The caller holds c.mu for
// reading. A spare is checked empty again (nothing of the sandbox can enter it, but a
// process of the host with write access to the hierarchy could): one that is not is
// killed, closed and left for destroy to remove. After KillAll no spare is used.
func (c *sandboxCgroup) reuseLocked() *treeCgroup {
	if c.killed.Load() {
		return nil // the spares were killed with the sandbox's group
	}
	for {
		c.spareMu.Lock()
		n := len(c.spare)
		if n == 0 {
			c.spareMu.Unlock()
			return nil
		}
		g := c.spare[n-1]
		c.spare = c.spare[:n-1]
		c.spareMu.Unlock()
		t := &treeCgroup{c: c, dir: g.dir, fd: g.fd, events: g.events, procs: g.procs, dirf: g.dirf}
		t.mu.Lock()
		empty := t.emptyLocked()
		t.empty = false // the new tree's own state starts now
		if !empty {
			t.killLocked()
			t.closeLocked()
		}
		t.mu.Unlock()
		if empty {
			return t
		}
	}
}

// keep hands the emptied group of t to the sandbox's spares, and reports whether it
// took it. The caller holds t.mu; t is left without a group, so that the old owner's
// later calls do nothing. A group that was killed is not kept: on the kernel this was
// measured on (6.18), a process cloned into a group after cgroup.kill was written to
// it is killed at once (TestCgroupTreeReuse catches it). A group with groups below it
// (made by a process of the tree that could write the hierarchy) is not kept either:
// it is not the plain group a tree needs.
func (c *sandboxCgroup) keep(t *treeCgroup) bool {
	var st unix.Stat_t
	if unix.Fstat(t.fd, &st) != nil || st.Nlink != 2 { // a directory's links: ".", its name and each child's ".."
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	if c.destroyed || len(c.spare) >= maxSpare || t.events < 0 || t.killed || c.killed.Load() {
		return false
	}
	c.spare = append(c.spare, spareGroup{dir: t.dir, fd: t.fd, events: t.events, procs: t.procs, dirf: t.dirf})
	t.fd, t.events, t.procs, t.dirf = -1, -1, nil, nil
	return true
}

// treeCgroup is the cgroup2 group of one process tree: its leader is cloned into it
// (SysProcAttr.UseCgroupFD), so the leader and every descendant, setsid or not, is in
// it from its first instruction, and cgroup.kill ends all of them at once.
//
// Once cgroup.events says "populated 0" the group stays empty: a process enters a
// cgroup2 group only by being forked in it or by a write to its cgroup.procs (or a
// clone into it) from outside, which the sandbox's processes cannot make. So a tree
// whose group was seen empty is neither killed nor waited for again.
//
// A nil *treeCgroup does nothing. kill is safe for concurrent use; attach and remove
// are called by the tree's owner, in that order, and remove once.
type treeCgroup struct {
	c   *sandboxCgroup
	dir string

	mu     sync.Mutex // guards the fds, which remove closes
	fd     int        // the group's directory, open from newTree until remove
	events int        // its cgroup.events, opened at the first kill or remove; -1 before
	procs  *os.File   // its cgroup.procs, opened by the first procsFile; nil before
	dirf   *os.File   // a copy of fd, made by the first dirFile; nil before
	empty  bool       // cgroup.events said "populated 0"; only read once the leader started
	killed bool       // cgroup.kill was written: the group cannot be reused
}

// attach makes cmd start inside the group, keeping cmd's other attributes.
func (t *treeCgroup) attach(cmd *exec.Cmd) {
	if t == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, t.fd
}

// procsFile returns the group's cgroup.procs, open for writing: what a process that is
// to start in the group writes itself into (the namespace driver's init does). The
// tree owns it (the caller does not close it) and a spare group keeps it for its next
// tree, which saves an open and a close on every exec.
func (t *treeCgroup) procsFile() (*os.File, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: a process tree needs a cgroup", ErrNoCgroups)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.procs != nil {
		return t.procs, nil
	}
	if t.fd < 0 {
		return nil, fmt.Errorf("failed to open process cgroup: %w", ErrClosed)
	}
	fd, err := unix.Openat(t.fd, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open process cgroup: %w", os.NewSyscallError("open", err))
	}
	t.procs = os.NewFile(uintptr(fd), t.dir+"/cgroup.procs")
	return t.procs, nil
}

// dirFile returns the group's directory as a file: what the namespace driver's init
// clones a process into. Like procsFile, the tree owns it and a spare keeps it.
func (t *treeCgroup) dirFile() (*os.File, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: a process tree needs a cgroup", ErrNoCgroups)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirf != nil {
		return t.dirf, nil
	}
	if t.fd < 0 {
		return nil, fmt.Errorf("failed to open process cgroup: %w", ErrClosed)
	}
	fd, err := unix.FcntlInt(uintptr(t.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open process cgroup: %w", os.NewSyscallError("fcntl", err))
	}
	t.dirf = os.NewFile(uintptr(fd), t.dir)
	return t.dirf, nil
}

// kill sends SIGKILL to every process in the group, at once.
func (t *treeCgroup) kill() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.killLocked()
}

// killLocked writes cgroup.kill unless the group is known to be empty (one read of
// cgroup.events, cheaper than the write: the common end of a tree whose leader was
// the last of it).
func (t *treeCgroup) killLocked() {
	if t.fd < 0 || t.emptyLocked() {
		return
	}
	t.killed = true
	fd, err := unix.Openat(t.fd, "cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = writeControl(fd, []byte("1"))
	_ = unix.Close(fd)
}

// emptyLocked reports whether cgroup.events says "populated 0"; false when it cannot
// be read, so that the caller kills and waits as for a live tree.
func (t *treeCgroup) emptyLocked() bool {
	if t.empty {
		return true
	}
	if t.events < 0 {
		fd, err := unix.Openat(t.fd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		t.events = fd
	}
	var buf [64]byte
	n, err := unix.Pread(t.events, buf[:], 0)
	t.empty = err == nil && bytes.Contains(buf[:n], []byte("populated 0"))
	return t.empty
}

// remove kills what is left in the group, waits (bounded) for it to empty and removes
// it, or keeps it as a spare for the next tree. A group that does not empty in time
// stays; Sandbox.Close retries.
func (t *treeCgroup) remove() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd < 0 {
		return
	}
	defer t.closeLocked()
	if !t.emptyLocked() {
		t.killLocked()
		empty := false
		if t.events >= 0 {
			empty = waitEvents(t.events, cgroupEmptyBound)
		} else {
			empty = waitEmpty(t.dir, cgroupEmptyBound)
		}
		if !empty {
			return
		}
	}
	if t.c.keep(t) {
		return
	}
	// A group below it (made by a process of the tree that could write the
	// hierarchy) makes rmdir fail: remove the subtree then.
	if err := unix.Rmdir(t.dir); errors.Is(err, unix.EBUSY) || errors.Is(err, unix.ENOTEMPTY) {
		_ = removeGroupTree(t.dir)
	}
}

// closeLocked closes the group's fds.
func (t *treeCgroup) closeLocked() {
	if t.procs != nil {
		_ = t.procs.Close()
		t.procs = nil
	}
	if t.dirf != nil {
		_ = t.dirf.Close()
		t.dirf = nil
	}
	if t.events >= 0 {
		_ = unix.Close(t.events)
		t.events = -1
	}
	if t.fd >= 0 {
		_ = unix.Close(t.fd)
		t.fd = -1
	}
}
