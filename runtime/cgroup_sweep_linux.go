package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// destroy kills every process of the sandbox (cgroup.kill of the sandbox's cgroup2
// group reaches every tree; without containment the v1 groups' processes get SIGKILL),
// waits (bounded) for the groups to empty, removes them and then drops the lock. Later
// calls do nothing.
func (c *sandboxCgroup) destroy() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return nil
	}
	c.destroyed = true
	liveCgroups.Delete(c)
	for _, p := range c.procs {
		_ = unix.Close(p.fd)
	}
	c.procs = nil
	c.spareMu.Lock()
	for _, g := range c.spare {
		g.close()
	}
	c.spare = nil
	c.spareMu.Unlock()
	if c.nestFD >= 0 {
		_ = unix.Close(c.nestFD)
		c.nestFD = -1
	}
	err := killAndRemove(c.v2, c.v1dirs())
	if c.lock != nil {
		_ = c.lock.Close()
	}
	for _, d := range append(c.v1dirs(), c.v2) {
		if d != "" {
			_ = unix.Rmdir(filepath.Dir(d)) // the scope, once its last sandbox is gone
		}
	}
	return err
}

func (c *sandboxCgroup) v1dirs() []string {
	var out []string
	for _, ctl := range v1Controllers {
		if d := c.v1[ctl]; d != "" {
			out = append(out, d)
		}
	}
	return out
}

// killAndRemove ends every process in the cgroup2 group v2 (if not "") and the v1
// groups, and removes the groups with any groups below them.
func killAndRemove(v2 string, v1 []string) error {
	var errs []error
	if v2 != "" && fileExists(v2) {
		_ = writeCgroupFile(v2, "cgroup.kill", "1")
		if !waitEmpty(v2, cgroupEmptyBound) {
			errs = append(errs, fmt.Errorf("cgroup %s did not empty in %v", v2, cgroupEmptyBound))
		}
	}
	for _, d := range v1 {
		if fileExists(d) && !killV1(d, cgroupEmptyBound) {
			errs = append(errs, fmt.Errorf("cgroup %s did not empty in %v", d, cgroupEmptyBound))
		}
	}
	for _, d := range append([]string{v2}, v1...) {
		if d != "" {
			if err := removeGroupTree(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// waitEmpty waits until the cgroup2 group dir and its descendants hold no process
// (cgroup.events says "populated 0"; the kernel wakes pollers of the file when it
// changes), for at most bound. A zombie does not count: it left its group at exit.
func waitEmpty(dir string, bound time.Duration) bool {
	fd, err := unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errors.Is(err, unix.ENOENT)
	}
	defer unix.Close(fd)
	return waitEvents(fd, bound)
}

// waitEvents is waitEmpty on an open cgroup.events.
func waitEvents(fd int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	buf := make([]byte, 256)
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			return false
		}
		if strings.Contains(string(buf[:n]), "populated 0") {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}

// killV1 sends SIGKILL to the processes of the v1 group dir and its descendants until
// none is left (they may fork meanwhile), for at most bound. It is the fallback where
// no cgroup2 group holds them.
func killV1(dir string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var pids []int
		_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				pids = append(pids, readPids(p)...)
			}
			return nil
		})
		if len(pids) == 0 {
			return true
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // v1 has no event for an emptied group: poll, backing off
	}
}

// removeGroupTree removes the group dir and every group below it, deepest first.
func removeGroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() {
			if err := removeGroupTree(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, os.NewSyscallError("rmdir "+dir, err))
	}
	return errors.Join(errs...)
}

// Sweep ends what a previous run of the same node left behind, for a server to call
// once at start: every sandbox group under the scope's group (sandgate-<scope>, in the
// cgroup2 hierarchy and the v1 ones) that no live process holds is killed (every
// process in it, setsid or not) and removed. It returns the ids of the sandboxes that
// had such groups, sorted, each once, so that their processes' exits can be recorded.
// Groups of other scopes (other nodes on the same host) and groups a live runtime
// holds (another process using the same scope, as tests do) are never touched. Without
// cgroups it returns nothing.
func Sweep(scope string) ([]string, error) {
	ids, err := sweep(hostCgroups(), scopeDirName(scope))
	if err != nil {
		return ids, fmt.Errorf("failed to sweep cgroups: %w", err)
	}
	return ids, nil
}

func sweep(h *cgroupHost, scopeName string) ([]string, error) {
	var roots []string // the scope's group in each hierarchy, the primary one first
	if h.v2 != "" {
		roots = append(roots, filepath.Join(h.v2, scopeName))
	}
	for _, ctl := range v1Controllers {
		if own, ok := h.v1[ctl]; ok {
			roots = append(roots, filepath.Join(own, scopeName))
		}
	}
	if len(roots) == 0 {
		return nil, nil
	}
	var names []string
	for _, r := range roots {
		ents, err := os.ReadDir(r)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	var ids []string
	var errs []error
	for _, name := range names {
		primary := filepath.Join(roots[0], name)
		var lock *os.File
		if fileExists(primary) {
			l, err := lockDir(primary)
			switch {
			case errors.Is(err, errLockLost): // a live runtime holds it, or it just went
				continue
			case err != nil:
				errs = append(errs, err)
				continue
			}
			lock = l
		}
		var v2 string
		var v1 []string
		for i, r := range roots {
			if i == 0 && h.v2 != "" {
				v2 = filepath.Join(r, name)
			} else {
				v1 = append(v1, filepath.Join(r, name))
			}
		}
		if err := killAndRemove(v2, v1); err != nil {
			errs = append(errs, err)
		}
		if lock != nil {
			_ = lock.Close()
		}
		if id := sandboxOfGroup(name); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, r := range roots {
		_ = unix.Rmdir(r) // fails while a live sandbox is in it
	}
	slices.Sort(ids)
	return ids, errors.Join(errs...)
}

// writeCgroupFile writes one value to a cgroup control file.
func writeCgroupFile(dir, file, val string) error {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(filepath.Join(dir, file), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return os.NewSyscallError("open "+file, err)
	}
	defer unix.Close(fd)
	if err := writeControl(fd, []byte(val)); err != nil {
		return fmt.Errorf("failed to write %q to %s: %w", val, filepath.Join(dir, file), err)
	}
	return nil
}

// writeControl writes b to an open cgroup control file. A write there may block (a
// memory limit below the usage reclaims first) and be interrupted by a signal, Go's
// preemption among them: it is tried again then, as os.File does.
func writeControl(fd int, b []byte) error {
	return retryEINTR(func() error {
		_, err := unix.Write(fd, b)
		return err
	})
}

// retryEINTR runs op until it fails with anything but EINTR, or succeeds.
func retryEINTR(op func() error) error {
	for {
		if err := op(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readCgroupInt reads a control file holding one integer.
func readCgroupInt(dir, file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readPids reads the cgroup.procs of one group.
func readPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// countProcs counts the processes of dir and its descendants.
func countProcs(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			n += int64(len(readPids(p)))
		}
		return err
	})
	return n, err
}
