package runtime

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// delegate gives uid and gid (a user namespace's root, as the host sees it) the
// sandbox group's cgroup.procs and that of every tree group made from now on, and of
// the spares: what the kernel checks when the namespace driver's init, running as
// that user, clones a process straight into a tree's group (CLONE_INTO_CGROUP asks
// for write access to the target group's cgroup.procs and to that of the common
// ancestor of the target and the cloner's own group, which is the sandbox's group).
// Without it the init's children write themselves into their group through the
// cgroup.procs the server opened, one migration per exec.
//
// Why this is safe: it lets that uid move processes between this sandbox's own groups
// and nowhere else (every ancestor above the sandbox's group stays root's). Nothing
// inside a sandbox can reach a cgroup2 file: the sandbox has no /sys, may not mount,
// and cannot open the init's fds through /proc (it lacks the init's capabilities, so
// ptrace access, which /proc/<pid>/fd asks, is refused). A host process that runs as
// uid could signal or ptrace the sandbox's processes anyway.
func (c *sandboxCgroup) delegate(uid, gid int) error {
	if c == nil || c.v2 == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return ErrClosed
	}
	if err := unix.Fchownat(c.dir, "cgroup.procs", uid, gid, 0); err != nil {
		return fmt.Errorf("failed to delegate the sandbox's cgroup: %w", os.NewSyscallError("fchownat", err))
	}
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	for _, g := range c.spare {
		if err := unix.Fchownat(g.fd, "cgroup.procs", uid, gid, 0); err != nil {
			return fmt.Errorf("failed to delegate a process cgroup: %w", os.NewSyscallError("fchownat", err))
		}
	}
	c.owner = &cgroupOwner{uid: uid, gid: gid}
	return nil
}

// cgroupOwner is whom a sandbox's groups are delegated to (delegate).
type cgroupOwner struct{ uid, gid int }
