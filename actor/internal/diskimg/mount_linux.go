package diskimg

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// busyWait is how long Unmount retries a busy mount (a file the files API still has
// open for a moment) before it detaches it lazily.
const busyWait = time.Second

// mountFlags: an image is a workspace, not a place for device nodes or setuid
// programs, and access times are not worth a write.
const mountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME

// Attach attaches image (made by Create) to a free loop device and mounts it on dir,
// an existing directory that is not a symlink and not a mount point (ErrMounted). The
// device clears itself when the filesystem is unmounted. It does not check whether a
// device still holds the image from an earlier mount: see Held.
func Attach(image, dir string) (m *Mount, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("diskimg: failed to mount image: %w", err)
		}
	}()
	// The mount goes on the directory this fd names, so a symlink swapped in at dir
	// (a sandbox process can rename its own workspace) is refused, not followed.
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	if root, err := mountRoot(dfd); err != nil {
		return nil, err
	} else if root {
		return nil, fmt.Errorf("%w: %s", ErrMounted, dir)
	}
	fd, n, autoclear, err := attachLoop(image)
	if err != nil {
		return nil, err
	}
	// Closing fd after the mount leaves the mount as the device's only user; closing it
	// after a failed mount clears the device (autoclear), or detach does.
	defer unix.Close(fd)
	dev := "/dev/loop" + strconv.Itoa(n)
	if err := unix.Mount(dev, "/proc/self/fd/"+strconv.Itoa(dfd), "ext4", mountFlags, ""); err != nil {
		if !autoclear {
			_ = detachLoop(n)
		}
		return nil, fmt.Errorf("mount %s on %s: %w", dev, dir, err)
	}
	return &Mount{Image: image, Dir: dir, Loop: n, autoclear: autoclear}, nil
}

// mountRoot reports whether the directory fd names is the root of a mount.
func mountRoot(fd int) (bool, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &st); err != nil {
		return false, fmt.Errorf("statx: %w", err)
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, errors.New("statx: the kernel does not report mount roots (needs Linux 5.8)")
	}
	return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
}

// Unmount unmounts the image and lets its loop device go. A busy mount is tried again
// for up to a second, then detached lazily (lazy is true): it leaves the directory at
// once, and the kernel releases the filesystem and the device when its last open file
// closes; until then Held reports the image held. A directory that is no longer a
// mount point is not an error. Unmount must not be called again after it succeeded.
func (m *Mount) Unmount() (lazy bool, err error) {
	deadline := time.Now().Add(busyWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err = unix.Unmount(m.Dir, unix.UMOUNT_NOFOLLOW)
		if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break // unmounted, or not mounted there any more
		}
		if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("diskimg: failed to unmount %s: %w", m.Dir, err)
		}
		if time.Now().After(deadline) {
			if err := unix.Unmount(m.Dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
				return false, fmt.Errorf("diskimg: failed to detach busy mount %s: %w", m.Dir, err)
			}
			lazy = true
			break
		}
		time.Sleep(delay)
	}
	if !m.autoclear {
		// On a device still in use, LOOP_CLR_FD sets autoclear instead: it then lets
		// go when the lazily detached filesystem does.
		if err := detachLoop(m.Loop); err != nil {
			return lazy, fmt.Errorf("diskimg: failed to detach loop device: %w", err)
		}
	}
	return lazy, nil
}

// Detach detaches the filesystem mounted on dir lazily, at once: it leaves the
// directory now and is released (its loop device with it) when its last user goes.
// For a process about to exit; a directory that is not a mount point is not an error.
func Detach(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("diskimg: failed to detach %s: %w", dir, err)
	}
	return nil
}

// Usage returns the space used and in all of the filesystem mounted on dir.
func Usage(dir string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Space{}, fmt.Errorf("diskimg: failed to stat filesystem: %w", err)
	}
	bs := int64(st.Bsize)
	return Space{Used: int64(st.Blocks-st.Bfree) * bs, Total: int64(st.Blocks) * bs}, nil
}
