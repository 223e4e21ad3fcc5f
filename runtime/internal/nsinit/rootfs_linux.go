package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// staging is where the new root is assembled before pivot_root. A tmpfs is mounted
// over it in the init's private mount namespace only; the workspace and rootfs are
// reached through fds opened before, so it does not matter if they live under it.
const staging = "/tmp"

// hostEntries are the parts of the host's / that make up the default root.
var hostEntries = []string{"usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// ownMounts are the root entries the init makes itself; a Rootfs's own are skipped.
var ownMounts = map[string]bool{"proc": true, "dev": true, "tmp": true, "workspace": true, "sys": true}

// devNodes are the device files bound from the host's /dev into the sandbox's.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupRoot builds the sandbox's filesystem and pivots into it. It runs in the init,
// as pid 1 of fresh pid and mount namespaces, before anything is spawned. fds are those
// of the config frame (see userNSFiles): empty without a user namespace; the caller
// closes them.
//
//  1. Make every mount private, so nothing propagates to or from the host.
//  2. Open the workspace and the root's source directory (O_PATH) while they are
//     still reachable (with a user namespace, the server sent them as mount trees).
//  3. Mount a tmpfs at staging and bind the root's entries into it read-only
//     (symlinks are copied).
//  4. Mount a fresh /proc, tmpfs /tmp, a minimal /dev (host nodes bound in, a new
//     devpts instance) and /dev/shm, and bind the workspace read-write at /workspace
//     (or attach its idmapped tree there).
//  5. pivot_root into staging, detach the old root, and remount / read-only.
func setupRoot(cfg Config, fds []int) (err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("failed to make mounts private: %w", err)
	}
	if want := len(userNSFDNames(cfg)); len(fds) != want {
		return fmt.Errorf("%w: the config frame has %d fds, want %d", ErrProtocol, len(fds), want)
	}
	mountWS := func(dst string) error { return attachTree(fds[0], dst) }
	if cfg.UserNS == nil {
		ws, err := unix.Open(cfg.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("failed to open the workspace: %w", err)
		}
		defer unix.Close(ws)
		mountWS = func(dst string) error { return bindWorkspace(fdPath(ws, ""), dst) }
	}
	src := "" // the root's source directory; empty when it is a tree in fds
	if cfg.Rootfs == "" || cfg.UserNS == nil {
		dir := "/"
		if cfg.Rootfs != "" {
			dir = cfg.Rootfs
		}
		srcFD, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("failed to open the rootfs: %w", err)
		}
		defer unix.Close(srcFD)
		src = fdPath(srcFD, "")
	}
	if err := mount("tmpfs", staging, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return err
	}
	if src == "" {
		err = bindEntriesFromTree(cfg, fds[1])
	} else {
		err = bindEntries(cfg, src)
	}
	if err != nil {
		return err
	}
	if err := mountSpecial(mountWS); err != nil {
		return err
	}
	return pivot()
}

// bindEntriesFromTree binds the root's entries from a detached rootfs tree, attached
// below staging only while they are bound.
func bindEntriesFromTree(cfg Config, tree int) (err error) {
	src := filepath.Join(staging, ".rootfs")
	if err := makeMountPoint(src, true); err != nil {
		return err
	}
	if err := attachTree(tree, src); err != nil {
		return err
	}
	err = bindEntries(cfg, src)
	if uerr := unix.Unmount(src, unix.MNT_DETACH); uerr != nil && err == nil {
		err = fmt.Errorf("failed to detach the rootfs: %w", uerr)
	}
	if rerr := os.Remove(src); rerr != nil && err == nil {
		err = fmt.Errorf("failed to remove the rootfs' mount point: %w", rerr)
	}
	return err
}

// bindEntries binds the root's entries from the directory src into staging.
func bindEntries(cfg Config, src string) error {
	entries := hostEntries
	if cfg.Rootfs != "" {
		var err error
		if entries, err = rootfsEntries(src); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := bindEntry(filepath.Join(src, e), filepath.Join(staging, e)); err != nil {
			return err
		}
	}
	return nil
}

// bindWorkspace binds the workspace read-write, nosuid and nodev at dst.
func bindWorkspace(ws, dst string) error {
	if err := mount(ws, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// rootfsEntries lists the top-level entries of a Rootfs, less those the init mounts.
func rootfsEntries(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read the rootfs: %w", err)
	}
	var out []string
	for _, de := range des {
		if !ownMounts[de.Name()] {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// fdPath names name inside the directory open as fd, through /proc/self/fd.
func fdPath(fd int, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if name != "" {
		p += "/" + name
	}
	return p
}

// bindEntry puts src at dst read-only: a symlink is copied, a directory or file bound.
// A missing src is skipped (not every host has lib32).
func bindEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to stat %s: %w", filepath.Base(dst), err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("failed to read link %s: %w", filepath.Base(dst), err)
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("failed to link %s: %w", filepath.Base(dst), err)
		}
		return nil
	}
	if err := makeMountPoint(dst, fi.IsDir()); err != nil {
		return err
	}
	return bindRO(src, dst)
}

// bindRO binds src at dst read-only. A bind mount takes its flags only from a second,
// remounting call.
func bindRO(src, dst string) error {
	if err := mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// bindROIfExists makes p read-only where the kernel has it.
func bindROIfExists(p string) error {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return bindRO(p, p)
}

func makeMountPoint(p string, dir bool) error {
	if dir {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("failed to make %s: %w", p, err)
		}
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("failed to make %s: %w", p, err)
	}
	return f.Close()
}

// mountSpecial mounts /proc, /tmp, /dev and /workspace (with mountWS) in staging.
func mountSpecial(mountWS func(dst string) error) error {
	r := func(p string) string { return filepath.Join(staging, p) }
	for _, d := range []string{"proc", "tmp", "dev", "workspace"} {
		if err := makeMountPoint(r(d), true); err != nil {
			return err
		}
	}
	const nosuid = unix.MS_NOSUID | unix.MS_NODEV
	steps := []func() error{
		func() error { return mount("proc", r("proc"), "proc", nosuid|unix.MS_NOEXEC, "") },
		// Root without capabilities may still write root-owned sysctls: keep them read-only.
		func() error { return bindRO(r("proc/sys"), r("proc/sys")) },
		func() error { return bindROIfExists(r("proc/sysrq-trigger")) },
		func() error { return mount("tmpfs", r("tmp"), "tmpfs", nosuid, "mode=1777") },
		func() error { return mount("tmpfs", r("dev"), "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755") },
		func() error { return makeDev(r("dev")) },
		func() error { return mountWS(r("workspace")) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// makeDev fills the sandbox's /dev: host nodes, a new devpts instance, /dev/shm and
// the usual links.
func makeDev(dev string) error {
	for _, n := range devNodes {
		p := filepath.Join(dev, n)
		if err := makeMountPoint(p, false); err != nil {
			return err
		}
		if err := mount("/dev/"+n, p, "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := makeMountPoint(filepath.Join(dev, d), true); err != nil {
			return err
		}
	}
	if err := mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return err
	}
	links := [][2]string{{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"},
		{"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}}
	for _, l := range links {
		if err := os.Symlink(l[0], filepath.Join(dev, l[1])); err != nil {
			return fmt.Errorf("failed to link /dev/%s: %w", l[1], err)
		}
	}
	return nil
}

// pivot makes staging the root, detaches the old one and makes / read-only.
func pivot() error {
	old := filepath.Join(staging, ".oldroot")
	if err := os.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("failed to make the old root's mount point: %w", err)
	}
	if err := unix.PivotRoot(staging, old); err != nil {
		return fmt.Errorf("failed to pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("failed to chdir to the new root: %w", err)
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("failed to detach the old root: %w", err)
	}
	if err := os.Remove("/.oldroot"); err != nil {
		return fmt.Errorf("failed to remove the old root's mount point: %w", err)
	}
	return mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

func mount(src, dst, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("failed to mount %s on %s: %w", src, dst, err)
	}
	return nil
}
