package nsinit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// userNSAttr adds a user namespace for r to the init's SysProcAttr. The init becomes
// root of the new namespace, which then owns the pid, mount, uts, ipc and net
// namespaces made in the same clone, so the init may set each of them up.
//
// Go writes the maps from the parent before the child goes on. The child then needs
// setresuid(0) and setresgid(0) to hold root's ids in the namespace (without them it
// stays unmapped, with no capabilities), and an empty setgroups drops the supplementary
// groups the server had (gid 0 among them), which would otherwise stay attached as
// "nogroup" inside and still grant the server's group access outside. setgroups stays
// allowed in the namespace so that a spawn with Config.UID can also drop groups; root
// wrote the map, so allowing it hands the sandbox nothing (its processes have no
// CAP_SETGID anyway).
func userNSAttr(sys *syscall.SysProcAttr, r IDRange) {
	sys.Cloneflags |= unix.CLONE_NEWUSER
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.HostUID), Size: int(r.Size)}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.HostGID), Size: int(r.Size)}}
	sys.GidMappingsEnableSetgroups = true
	sys.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
}

// userNSFDNames names the fds of the config frame for cfg, in order (see
// userNSFiles).
func userNSFDNames(cfg Config) []string {
	switch {
	case cfg.UserNS == nil:
		return nil
	case cfg.Rootfs == "":
		return []string{"workspace"}
	}
	return []string{"workspace", "rootfs"}
}

// userNSFiles returns the fds the config frame carries when cfg has a user namespace
// (none otherwise), in the order of userNSFDNames:
//
//  1. the workspace as a detached mount tree, idmapped through the init's user
//     namespace, nosuid, nodev and private;
//  2. the Rootfs, if cfg has one, as a detached mount tree, read-only, nosuid, nodev
//     and private, not idmapped: its files stay the host's root's.
//
// Both are made here because the init cannot: an idmapped mount needs CAP_SYS_ADMIN
// over the filesystem's own user namespace (the host's), and root of the sandbox's
// namespace may not even search the directories above the workspace or rootfs (a data
// directory is 0700). A mount of the server's namespace cannot be bound from inside
// another, but a detached tree can be attached there. The caller closes the fds.
func userNSFiles(cfg Config, initPID int) (fds []int, err error) {
	if cfg.UserNS == nil {
		return nil, nil
	}
	defer func() {
		if err != nil {
			closeFDs(fds)
			fds = nil
		}
	}()
	userns, err := unix.Open("/proc/"+strconv.Itoa(initPID)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open the init's user namespace: %w", err)
	}
	defer unix.Close(userns)
	tree, err := detachedTree(cfg.Workspace, &unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(userns),
	})
	if err != nil {
		return nil, fmt.Errorf("failed to idmap the workspace: %w", err)
	}
	fds = append(fds, tree)
	if cfg.Rootfs != "" {
		tree, err := detachedTree(cfg.Rootfs, &unix.MountAttr{
			Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		})
		if err != nil {
			return fds, fmt.Errorf("failed to clone the rootfs: %w", err)
		}
		fds = append(fds, tree)
	}
	return fds, nil
}

// detachedTree clones dir (and the mounts below it) into a detached mount tree, sets
// attr on all of it, and makes it private (a shared host mount would otherwise make
// the clone its peer).
//
// With MOUNT_ATTR_IDMAP the ids of the tree are mapped through the user namespace
// attr names, as if the disk were inside it: a file of uid n on disk is seen as host
// uid HostUID+n, which is n inside. So the files root owns on disk belong to root
// inside, and what root inside writes is owned by root on disk. No chown is ever
// needed, and a workspace the local driver filled (root-owned) is the sandbox's as it
// is.
//
// dir's last element must not be a symlink: a workspace swapped for a link to / would
// otherwise hand the sandbox's root the host's root filesystem, idmapped to it.
func detachedTree(dir string, attr *unix.MountAttr) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("failed to open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.AT_EMPTY_PATH|unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("failed to clone the mount of %s: %w", dir, err)
	}
	attr.Propagation = unix.MS_PRIVATE
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		_ = unix.Close(tree)
		return -1, fmt.Errorf("failed to set the attributes of the mount of %s: %w", dir, err)
	}
	return tree, nil
}

// attachTree mounts a detached mount tree received from the server at dst.
func attachTree(tree int, dst string) error {
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("failed to attach a mount at %s: %w", dst, err)
	}
	return nil
}

// UserNSSupported reports why Config.UserNS cannot work on this machine for
// workspaces on the filesystem of workspaceDir, or nil if it can. It starts one init
// with DefaultIDRange and workspaceDir as its workspace (read nothing, wrote nothing)
// and closes it, so every step is tried for real: the user namespace and its maps,
// the idmapped mount of workspaceDir's filesystem, and the sandbox's mounts inside.
// Like Start, it needs the binary's main to call Main. Where it fails, run spawned
// processes as an unprivileged Config.UID instead.
func UserNSSupported(ctx context.Context, workspaceDir string) error {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return fmt.Errorf("%w: user.max_user_namespaces is 0", ErrNoUserNS)
	}
	r := DefaultIDRange
	in, err := Start(ctx, Config{ID: "userns-probe", Workspace: workspaceDir, Network: NetworkNone, UserNS: &r})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoUserNS, err)
	}
	if err := in.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoUserNS, err)
	}
	return nil
}
