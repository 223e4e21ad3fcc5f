package diskimg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	loopControl = "/dev/loop-control"
	loopMajor   = 7
	// attachTries bounds the race for a free device: LOOP_CTL_GET_FREE names one, and
	// another process may configure it before we do (EBUSY).
	attachTries = 64
)

// attachLoop binds image to a free loop device with LO_FLAGS_AUTOCLEAR, so the device
// lets the image go when its last user (the mount) goes. It returns the device's open
// fd, which the caller closes once the image is mounted (closing it before would clear
// the device at once), the device's number, and whether autoclear was kept.
func attachLoop(image string) (fd, n int, autoclear bool, err error) {
	file, err := unix.Open(image, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, false, fmt.Errorf("open image: %w", err)
	}
	defer unix.Close(file) // the device holds its own reference once configured
	ctl, err := unix.Open(loopControl, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, false, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	defer unix.Close(ctl)
	cfg := unix.LoopConfig{Fd: uint32(file)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], image)
	for range attachTries {
		n, err = unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return -1, 0, false, fmt.Errorf("get free loop device: %w", err)
		}
		fd, err = openLoop(n)
		if err != nil {
			return -1, 0, false, err
		}
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if errors.Is(err, unix.EBUSY) {
			_ = unix.Close(fd) // taken by someone else since GET_FREE: ask again
			continue
		}
		if err != nil {
			_ = unix.Close(fd)
			return -1, 0, false, fmt.Errorf("configure /dev/loop%d: %w", n, err)
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		autoclear = err == nil && info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0
		return fd, n, autoclear, nil
	}
	return -1, 0, false, fmt.Errorf("no free loop device after %d tries: %w", attachTries, unix.EBUSY)
}

// openLoop opens /dev/loop<n>, making the node where no devtmpfs made it.
func openLoop(n int) (int, error) {
	path := "/dev/loop" + strconv.Itoa(n)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		err = unix.Mknod(path, unix.S_IFBLK|0o660, int(unix.Mkdev(loopMajor, uint32(n))))
		if err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, nil
}

// detachLoop unbinds /dev/loop<n> from its file. ENXIO (nothing bound) is success.
func detachLoop(n int) error {
	fd, err := unix.Open("/dev/loop"+strconv.Itoa(n), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/loop%d: %w", n, err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach /dev/loop%d: %w", n, err)
	}
	return nil
}

// Held reports whether loop device n is still bound to image: after an unmount the
// device lets the image go once the filesystem's last user is gone, which a lazy
// unmount or a mount namespace that still holds the filesystem delays. Mounting the
// image again before then would put two filesystems on one file.
func Held(loop int, image string) bool {
	f := backingFile(loop) // as the kernel names it: absolute, no symlinks
	return f != "" && (f == image || f == resolve(image))
}

// backingFile is the file bound to /dev/loop<n>, "" when none (or when unknown).
func backingFile(n int) string {
	b, err := os.ReadFile("/sys/block/loop" + strconv.Itoa(n) + "/loop/backing_file")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n") // a deleted file shows as "path (deleted)": not image
}

// maxHolders bounds the processes Holders names.
const maxHolders = 8

// Holders names the processes that keep the filesystem on /dev/loop<n> alive, at
// most maxHolders: one per mount namespace that mounts it, as "pid (comm) mnt:[inode]",
// and each process with a file, working directory or root on it, or the device itself
// open, as "pid (comm) fd 5" (or "cwd", "root"). A lazily detached mount is in no namespace any more, and the
// files open on it are all that name its holders. It reads every process's mountinfo
// and stats every open file; call it only to explain a failure.
func Holders(n int) []string {
	dev := fmt.Sprintf("%d:%d", loopMajor, n)
	devNum := unix.Mkdev(loopMajor, uint32(n))
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	name := func(p string) string {
		comm, _ := os.ReadFile(p + "/comm")
		return fmt.Sprintf("%s (%s)", filepath.Base(p), strings.TrimSpace(string(comm)))
	}
	for _, p := range procs {
		if len(out) >= maxHolders {
			break
		}
		if ns, err := os.Readlink(p + "/ns/mnt"); err == nil && !seen[ns] {
			if info, err := os.ReadFile(p + "/mountinfo"); err == nil {
				seen[ns] = true
				if mountsDevice(info, dev) {
					out = append(out, name(p)+" "+ns)
				}
			}
		}
		for _, f := range openOn(p, devNum) {
			out = append(out, name(p)+" "+f)
		}
	}
	return out[:min(len(out), maxHolders)]
}

// openOn names process p's open files, working directory and root that are on the
// filesystem of device dev, or are the device: "fd 5", "cwd", "root".
func openOn(p string, dev uint64) []string {
	on := func(path string) bool {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			return false
		}
		return st.Dev == dev || (st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == dev) // a file on it, or the device
	}
	var out []string
	for _, l := range []string{"cwd", "root"} {
		if on(p + "/" + l) {
			out = append(out, l)
		}
	}
	fds, err := os.ReadDir(p + "/fd")
	if err != nil {
		return out
	}
	for _, fd := range fds {
		if on(p + "/fd/" + fd.Name()) {
			out = append(out, "fd "+fd.Name())
		}
	}
	return out
}

// mountsDevice reports whether mountinfo has a mount of device dev ("major:minor").
func mountsDevice(mountinfo []byte, dev string) bool {
	for line := range strings.SplitSeq(string(mountinfo), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == dev {
			return true
		}
	}
	return false
}
