package actor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
)

// Workspace disk quotas (docs/design.md, "Workspace disk quotas"). With
// Config.DiskImages, a sandbox created with a DiskBytes budget gets an ext4 image of
// that size, DATA/disks/<id>.img, mounted on its workspace directory while its actor is
// active:
//  1. create makes the image and mounts it, before the sandbox's cwd is made in it;
//  2. activation mounts it, before any turn (so the files API reaches it without
//     starting a runtime); a turn that needs it (runtime, Workspace) mounts it again if
//     hibernation unmounted it or the activation's mount failed;
//  3. hibernation, passivation, deactivation and node close unmount it once the
//     runtime is closed; delete unmounts it and removes the image.
//
// A sandbox without an image file (made before images were on, or while they were off)
// keeps its plain directory, unquota'd: its files are never moved or hidden. An image
// that exists is mounted whether or not new sandboxes get one.

const (
	// diskWait bounds how long a mount waits for the loop device of the image's
	// previous mount to let it go (see diskimg.Held) before the request fails as
	// unavailable.
	diskWait = time.Second
	// moveDiskWait is diskWait for a planned move's export and import, which run in
	// the background: failing there loses the workspace, not one request. A device
	// lets its image go only once the last mount of its filesystem went, and the
	// kernel's release after that; a process that entered a new mount namespace while
	// the image was mounted holds a copy of the mount, as any sandbox init on this host
	// (any node's) does until it detached the host's mounts. On the loaded 2-core VM
	// (docs/design.md) that took mostly tens of milliseconds, but 0.4 to 3.6 s one
	// time in four, where diskWait had the move report the workspace lost. Inits in
	// user namespaces kept their detached copies, out of every mountinfo, for their
	// whole life, until they learned to execute themselves again once set up; the
	// bound stays, as an init's setup under load still holds copies for a moment.
	moveDiskWait = 30 * time.Second
)

// diskImages is the node's side of workspace images. Safe for concurrent use.
type diskImages struct {
	enabled bool         // new sandboxes with a DiskBytes budget get an image
	present bool         // images may exist here: enabled, or DATA/disks was found
	mounted atomic.Int64 // images mounted now, for metrics
	// held is diskimg.Held, or a test's; wait is diskWait, or a test's.
	held func(loop int, image string) bool
	wait time.Duration
	log  *slog.Logger

	mu   sync.Mutex
	left map[string]*leftMount // sandbox id → its image's last mount, while that may still hold the image
}

// leftMount is an image's mount that an activation is unmounting or has unmounted,
// kept until its loop device is seen to let the image go.
type leftMount struct {
	m    *diskimg.Mount
	done chan struct{} // closed once the unmount returned
}

// openDisks decides whether new sandboxes get images, logs whether workspace disk
// quotas are enforced and why not, and unmounts what a crash of this node left mounted
// under its workspaces. It runs in Open, after the processes of a crashed run were
// ended (they could hold the mounts) and before anything activates.
func (n *Node) openDisks() {
	d := &n.disks
	d.held, d.wait, d.log = diskimg.Held, diskWait, n.log
	if n.cfg.diskHeld != nil {
		d.held = n.cfg.diskHeld
	}
	if n.cfg.diskWait > 0 {
		d.wait = n.cfg.diskWait
	}
	_, statErr := os.Stat(n.disksDir())
	d.present = n.cfg.DiskImages || statErr == nil
	supported := n.cfg.diskSupported
	if supported == nil {
		supported = diskimg.Supported
	}
	switch err := supported(); {
	case !n.cfg.DiskImages:
		n.log.Info("actor: workspace disk quotas are not enforced: disk images are off")
	case err != nil:
		n.log.Warn("actor: workspace disk quotas are not enforced: this machine cannot mount disk images", "why", err)
	default:
		if err := os.MkdirAll(n.disksDir(), 0o700); err != nil {
			n.log.Error("actor: workspace disk quotas are not enforced", "err", err)
			break
		}
		d.enabled = true
		n.log.Info("actor: workspace disk quotas enforced: an ext4 image per sandbox", "dir", n.disksDir())
	}
	if !d.present {
		return
	}
	swept, err := diskimg.Sweep(n.workspacesDir(), n.disksDir())
	if err != nil {
		n.log.Error("actor: failed to unmount disk images left by a previous run", "err", err)
	}
	if len(swept) > 0 {
		n.log.Warn("actor: unmounted disk images left by a previous run", "mounts", swept)
	}
	// A leftover that was busy (a process of the crashed run not dead yet) was detached
	// lazily, and still holds its image: its sandbox's next mount waits for it.
	held, err := diskimg.LoopsUnder(n.disksDir())
	if err != nil {
		n.log.Error("actor: failed to list loop devices", "err", err)
	}
	for _, l := range held {
		if id, ok := strings.CutSuffix(filepath.Base(l.File), ".img"); ok {
			d.unmounted(id, &diskimg.Mount{Image: l.File, Loop: l.N}, true)
		}
	}
}

func (n *Node) disksDir() string           { return filepath.Join(n.cfg.DataDir, "disks") }
func (n *Node) imagePath(id string) string { return filepath.Join(n.disksDir(), id+".img") }

// DiskImagesSupported reports whether this machine can give workspaces disk images
// (Config.DiskImages): nil, or an error saying why not (not Linux, not root, no loop
// devices, no mkfs.ext4).
func DiskImagesSupported() error { return diskimg.Supported() }

// MountedImages returns how many workspace images are mounted now. (Extension, for
// metrics.)
func (n *Node) MountedImages() int { return int(n.disks.mounted.Load()) }

// DetachImages detaches every workspace image mounted under the node's workspaces at
// once (lazily: each is released when its last user goes), for a forced exit that
// cannot wait for Close: the process exits next, and the images are not left mounted
// for the next start to sweep. Actors are not told; nothing may use the node after it.
// (Extension.)
func (n *Node) DetachImages() {
	points, err := diskimg.MountsUnder(n.workspacesDir())
	if err != nil {
		n.log.Error("actor: failed to detach workspace images", "err", err)
		return
	}
	for _, p := range points {
		if err := diskimg.Detach(p); err != nil {
			n.log.Error("actor: failed to detach workspace image", "err", err)
		}
	}
}

// createDisk makes and mounts the image of a sandbox being created, when images are on
// and its budget has a disk size. Otherwise it removes an image a create that failed to
// commit may have left under this id, which would hide the new plain workspace.
func (a *sbActor) createDisk(size int64) error {
	if !a.n.disks.enabled || size <= 0 {
		return a.dropDisk()
	}
	ctx, cancel := context.WithTimeout(a.ctx(), 30*time.Second)
	defer cancel()
	if err := diskimg.Create(ctx, a.n.imagePath(a.id), size); err != nil {
		return fmt.Errorf("%w: sandbox %q: %w", ErrUnavailable, a.id, err)
	}
	if err := a.mountDisk(); err != nil {
		_ = os.Remove(a.n.imagePath(a.id))
		return err
	}
	// A workspace starts empty, as a plain directory does: mkfs's lost+found would show
	// in every listing. e2fsck makes it again if it ever needs it.
	if err := os.Remove(filepath.Join(a.n.workspaceDir(a.id), "lost+found")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: sandbox %q: failed to empty new workspace: %w", ErrUnavailable, a.id, err)
	}
	return nil
}

// mountDisk mounts the sandbox's image on its workspace unless it is mounted, or the
// sandbox has none. A failure is ErrUnavailable: the image is there, but its files
// cannot be reached now.
func (a *sbActor) mountDisk() error {
	w := &a.sb
	if w.mount != nil || a.rec == nil || !a.n.disks.present {
		return nil
	}
	img := a.n.imagePath(a.id)
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		return nil // a plain directory workspace
	} else if err != nil {
		return fmt.Errorf("%w: failed to mount workspace of sandbox %q: %w", ErrUnavailable, a.id, err)
	}
	w.hasImage = true
	if err := a.n.disks.released(a.ctx(), a.id, img, a.n.disks.wait); err != nil {
		return err
	}
	dir := a.n.workspaceDir(a.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: failed to mount workspace of sandbox %q: %w", ErrUnavailable, a.id, err)
	}
	m, err := diskimg.Attach(img, dir)
	if err != nil {
		return fmt.Errorf("%w: sandbox %q: %w", ErrUnavailable, a.id, err)
	}
	w.mount = m
	a.n.disks.mounted.Add(1)
	return nil
}

// released waits until the image's previous mount has let it go: an activation that
// ended but is still unmounting it (it leaves the registry first), a lazily detached
// mount (a file was still open on it), or a loop device the kernel clears just after
// the unmount. Mounting the image again before then would corrupt it. It waits for the
// unmount (at most diskimg's busy wait) and then up to wait for the device, or until
// ctx is done.
func (d *diskImages) released(ctx context.Context, id, img string, wait time.Duration) error {
	d.mu.Lock()
	prev := d.left[id]
	d.mu.Unlock()
	if prev == nil {
		return nil
	}
	unmount := time.NewTimer(wait + 2*time.Second)
	defer unmount.Stop()
	select {
	case <-prev.done:
	case <-unmount.C:
		return fmt.Errorf("%w: the workspace image of sandbox %q is still being unmounted; retry shortly", ErrUnavailable, id)
	case <-ctx.Done():
		return fmt.Errorf("%w: the workspace image of sandbox %q is still being unmounted: %w", ErrUnavailable, id, ctx.Err())
	}
	if err := d.letGo(ctx, prev.m.Loop, img, wait); err != nil {
		return fmt.Errorf("%w: the workspace image of sandbox %q is still held by its previous mount: %w; retry shortly",
			ErrUnavailable, id, err)
	}
	d.mu.Lock()
	if d.left[id] == prev {
		delete(d.left, id)
	}
	d.mu.Unlock()
	return nil
}

// letGo waits until loop device loop no longer holds img, for at most wait or until
// ctx is done. A wait longer than a request's (a move's) that goes past a request's
// bound is logged, with the processes whose mount namespaces still mount the image's
// filesystem then, and again when the device let go: a device the kernel is slow to
// clear is let go within a second or two, one that something else holds is not.
func (d *diskImages) letGo(ctx context.Context, loop int, img string, wait time.Duration) error {
	began := time.Now()
	deadline, slow := began.Add(wait), began.Add(d.wait)
	logged := false
	for d.held(loop, img) {
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("/dev/loop%d held it for %v (its filesystem is kept alive by %v)",
				loop, wait, diskimg.Holders(loop))
		}
		if !logged && wait > d.wait && now.After(slow) {
			logged = true
			d.log.Warn("actor: a loop device still holds a workspace image past a request's wait",
				"image", img, "loop", loop, "waited", now.Sub(began), "held_by", diskimg.Holders(loop))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("/dev/loop%d holds it: %w", loop, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if logged {
		d.log.Info("actor: the loop device let the workspace image go", "image", img, "loop", loop, "waited", time.Since(began))
	}
	return nil
}

// leaving records that the activation holding m is ending: a new activation of the
// same sandbox, which may start as soon as this one leaves the registry, waits for the
// unmount (released). Called by stop before it drops the activation.
func (d *diskImages) leaving(id string, m *diskimg.Mount) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left == nil {
		d.left = map[string]*leftMount{}
	}
	d.left[id] = &leftMount{m: m, done: make(chan struct{})}
}

// unmounted records the end of m's unmount: the entry leaving made (or a new one, for
// an unmount no activation waited for) stays while the device may still hold the image.
func (d *diskImages) unmounted(id string, m *diskimg.Mount, mayHold bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.left[id]
	if e != nil && e.m == m {
		close(e.done)
		if !mayHold {
			delete(d.left, id)
		}
		return
	}
	if mayHold {
		if d.left == nil {
			d.left = map[string]*leftMount{}
		}
		e = &leftMount{m: m, done: make(chan struct{})}
		close(e.done)
		d.left[id] = e
	}
}

// unmountDisk unmounts the sandbox's image, after its runtime was closed: its usage is
// measured first, and kept while it is not mounted. A busy mount is detached lazily
// (diskimg); the next mount waits for it to let the image go.
func (a *sbActor) unmountDisk() {
	w := &a.sb
	m := w.mount
	if m == nil {
		return
	}
	a.measureDisk()
	w.mount = nil
	a.n.disks.mounted.Add(-1)
	lazy, err := m.Unmount()
	if err != nil {
		a.n.log.Error("actor: failed to unmount workspace image", "sandbox", a.id, "err", err)
	} else if lazy {
		a.n.log.Warn("actor: workspace image was busy at unmount: detached lazily", "sandbox", a.id)
	}
	a.n.disks.unmounted(a.id, m, lazy || err != nil || a.n.disks.held(m.Loop, m.Image))
}

// dropDisk unmounts and removes the sandbox's image (sandbox deleted or not created).
func (a *sbActor) dropDisk() error {
	a.unmountDisk()
	a.sb.hasImage = false
	if !a.n.disks.present {
		return nil
	}
	if err := os.Remove(a.n.imagePath(a.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("actor: failed to remove workspace image of %q: %w", a.id, err)
	}
	return nil
}

// measureDisk updates the cached disk usage from the mounted image's statfs, which is
// exact and cheap; it reports whether it could.
func (a *sbActor) measureDisk() bool {
	w := &a.sb
	if w.mount == nil {
		return false
	}
	sp, err := diskimg.Usage(w.mount.Dir)
	if err != nil {
		return false
	}
	w.disk.bytes, w.disk.at = sp.Used, a.now()
	return true
}
