package runtime

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// freezeGroupName is the group, below a sandbox's own, that holds the groups of all
// its process trees when its init holds a lease: <sandbox>/trees/t<n>. The init's own
// group stays beside it, <sandbox>/t<n>, so freezing trees stops every process of the
// sandbox but the init, which must go on running to hear a renewal.
const freezeGroupName = "trees"

// nestTrees makes the freeze group and has every tree made from now on made in it;
// the caller has made the trees that must stay outside (the init's) already. It
// returns the group's directory.
func (c *sandboxCgroup) nestTrees() (string, error) {
	if c == nil || c.v2 == "" {
		return "", fmt.Errorf("%w: freezing a sandbox needs a cgroup2 hierarchy", ErrNoCgroups)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.destroyed:
		return "", ErrClosed
	case c.nest != "":
		return c.nest, nil
	}
	if err := unix.Mkdirat(c.dir, freezeGroupName, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the freeze cgroup: %w", os.NewSyscallError("mkdir", err))
	}
	fd, err := unix.Openat(c.dir, freezeGroupName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Unlinkat(c.dir, freezeGroupName, unix.AT_REMOVEDIR)
		return "", fmt.Errorf("failed to open the freeze cgroup: %w", os.NewSyscallError("open", err))
	}
	c.nest, c.nestFD = filepath.Join(c.v2, freezeGroupName), fd
	return c.nest, nil
}
