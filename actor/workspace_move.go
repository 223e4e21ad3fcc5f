package actor

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
	"github.com/sandgate/sandgate/runtime"
)

// Moving a workspace to another node, for a planned move (docs/design.md, "Planned
// moves"). The old owner exports the workspace of a sandbox it no longer runs, the new
// owner imports it before it runs the sandbox; the caller (the gateway) carries the
// stream between them and makes sure that no activation of the sandbox starts on
// either node meanwhile (in a cluster: the partition is in handoff, so admission
// refuses it).
//
// The stream holds the files, never a disk image: a workspace with an image is
// mounted where an activation would mount it and read like a plain one, and the new
// owner, when it makes images, makes one of the same size and fills it before it
// renames it into place. So the move needs no sparse-file format, a node without
// images takes a quota'd workspace as a plain directory, and the image is always one
// this node's mkfs made.
//
// What arrives is installed whole or not at all: a plain workspace is unpacked beside
// its target and renamed into place (runtime.UnpackWorkspace); an image is filled
// under a temporary name and renamed into DATA/disks once unmounted. A failed import
// leaves neither the new workspace nor the one an earlier stay on this node left (it
// is older than the stream's), so the sandbox's next activation here finds none and
// its sandbox.moved says the workspace was lost.

// movePrefix starts the names of what an import has not installed yet, in the
// workspaces and disks directories; no sandbox id starts with a dot.
const movePrefix = ".incoming-"

// WorkspaceExport is a workspace opened for a move by ExportWorkspace. It is used by
// one goroutine; Close must be called.
type WorkspaceExport struct {
	n  *Node
	sb string
	m  *diskimg.Mount
	// DiskBytes is the size of the workspace's disk image, 0 for a plain directory:
	// the importing node makes an image of this size.
	DiskBytes int64
}

// ExportWorkspace opens the workspace of sandbox sb, which must not be active on this
// node (ErrUnavailable), for Pack: its disk image, if it has one, is mounted on the
// workspace directory until Close. The caller makes sure nothing activates sb before
// Close. (Extension.)
func (n *Node) ExportWorkspace(ctx context.Context, sb string) (*WorkspaceExport, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	if n.active(sb) != nil {
		return nil, fmt.Errorf("%w: sandbox %q is active on this node: its workspace is in use", ErrUnavailable, sb)
	}
	e := &WorkspaceExport{n: n, sb: sb}
	if !n.disks.present {
		return e, nil
	}
	img := n.imagePath(sb)
	fi, err := os.Stat(img)
	if errors.Is(err, fs.ErrNotExist) {
		return e, nil
	} else if err != nil {
		return nil, fmt.Errorf("actor: failed to export workspace of %q: %w", sb, err)
	}
	if err := n.disks.released(ctx, sb, img, moveDiskWait); err != nil {
		return nil, err
	}
	dir := n.workspaceDir(sb)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("actor: failed to export workspace of %q: %w", sb, err)
	}
	m, err := diskimg.Attach(img, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: failed to export workspace of %q: %w", ErrUnavailable, sb, err)
	}
	n.disks.mounted.Add(1)
	e.m, e.DiskBytes = m, fi.Size()
	return e, nil
}

// Pack writes the workspace as a tar stream (runtime.PackWorkspace) to w. A sandbox
// without a workspace directory here sends an empty one.
func (e *WorkspaceExport) Pack(ctx context.Context, w io.Writer, o runtime.PackOptions) (runtime.PackStats, error) {
	st, err := runtime.PackWorkspace(ctx, w, e.n.workspacesDir(), e.sb, o)
	if errors.Is(err, runtime.ErrFileNotFound) {
		return st, tar.NewWriter(w).Close()
	}
	if err == nil {
		e.n.takeImported(e.sb) // it moves on: what it brought here is no longer news
	}
	return st, err
}

// Close unmounts the workspace's image, if Export mounted one. Calling it again does
// nothing.
func (e *WorkspaceExport) Close() error {
	m := e.m
	if m == nil {
		return nil
	}
	e.m = nil
	e.n.disks.mounted.Add(-1)
	lazy, err := m.Unmount()
	e.n.disks.unmounted(e.sb, m, lazy || err != nil || e.n.disks.held(m.Loop, m.Image))
	if err != nil {
		return fmt.Errorf("actor: failed to close exported workspace of %q: %w", e.sb, err)
	}
	return nil
}

// ImportOptions are the settings of one ImportWorkspace call.
type ImportOptions struct {
	// DiskBytes is the size of the image the workspace had (WorkspaceExport.DiskBytes).
	// When it is positive and this node makes disk images, the files go into a new
	// image of that size; otherwise into a plain directory.
	DiskBytes int64
	// MaxBytes bounds the files received (runtime.UnpackOptions.MaxBytes).
	MaxBytes int64
	// Install is called once everything arrived and is on disk, just before it is
	// put in place; an error from it installs nothing. The caller checks there that
	// the sandbox may still be given this workspace.
	Install func() error
}

// ImportWorkspace reads a stream that WorkspaceExport.Pack wrote from r and installs
// it as sandbox sb's workspace on this node, replacing what an earlier stay here left
// (directory and image). sb must not be active here (ErrUnavailable), and the caller
// makes sure nothing activates it until ImportWorkspace returns. On an error nothing
// is installed and what an earlier stay left is gone too. (Extension.)
func (n *Node) ImportWorkspace(ctx context.Context, sb string, r io.Reader, o ImportOptions) (err error) {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	if n.active(sb) != nil {
		return fmt.Errorf("%w: sandbox %q is active on this node", ErrUnavailable, sb)
	}
	if !n.beginImport(sb) {
		return fmt.Errorf("%w: sandbox %q is active on this node", ErrUnavailable, sb)
	}
	defer n.endImport(sb)
	n.takeImported(sb)
	defer func() {
		if err != nil {
			n.dropWorkspace(sb)
			err = fmt.Errorf("actor: failed to import workspace of %q: %w", sb, err)
			return
		}
		n.noteImported(sb)
		// The living sandbox's workspace: a delete of it that never landed here must
		// not remove it (workspace_deleted.go).
		if err := n.unmarkDeleting(sb); err != nil {
			n.log.Error("actor: failed to settle a delete", "sandbox", sb, "err", err)
		}
	}()
	uo := runtime.UnpackOptions{MaxBytes: o.MaxBytes, Chown: os.Geteuid() == 0}
	if o.DiskBytes > 0 && n.disks.enabled {
		return n.importImage(ctx, sb, r, o, uo)
	}
	uo.Install = func() error {
		if o.Install != nil {
			if err := o.Install(); err != nil {
				return err
			}
		}
		return n.removeImage(sb) // it would be mounted over the files
	}
	return runtime.UnpackWorkspace(ctx, r, n.workspacesDir(), sb, uo)
}

// importImage fills a new image of o.DiskBytes with the stream and renames it into
// place, with an empty workspace directory to mount it on.
func (n *Node) importImage(ctx context.Context, sb string, r io.Reader, o ImportOptions, uo runtime.UnpackOptions) error {
	tag := movePrefix + sb + "-" + fmt.Sprintf("%x", time.Now().UnixNano())
	img := filepath.Join(n.disksDir(), tag+".img")
	mnt := filepath.Join(n.workspacesDir(), tag)
	mkctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := diskimg.Create(mkctx, img, o.DiskBytes)
	cancel()
	if err != nil {
		return err
	}
	installed := false
	defer func() {
		if !installed {
			_ = os.Remove(img)
		}
		_ = os.Remove(mnt)
	}()
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return err
	}
	m, err := diskimg.Attach(img, mnt)
	if err != nil {
		return err
	}
	n.disks.mounted.Add(1)
	err = os.Remove(filepath.Join(mnt, "lost+found"))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = runtime.UnpackInto(ctx, r, mnt, uo)
	}
	n.disks.mounted.Add(-1)
	lazy, uerr := m.Unmount()
	if err != nil {
		return err
	}
	if uerr != nil || lazy {
		return fmt.Errorf("failed to unmount the new image (lazily: %v): %w", lazy, uerr)
	}
	// The image is renamed only once no loop device holds it: a later mount of it
	// beside a device still bound to it would corrupt it.
	if err := n.disks.letGo(ctx, m.Loop, img, moveDiskWait); err != nil {
		return fmt.Errorf("the new image is still held: %w", err)
	}
	if o.Install != nil {
		if err := o.Install(); err != nil {
			return err
		}
	}
	dir := n.workspaceDir(sb)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := os.Rename(img, n.imagePath(sb)); err != nil {
		return err
	}
	installed = true
	return errors.Join(syncPath(n.disksDir()), syncPath(n.workspacesDir()))
}

// removeImage removes sb's image, if this node has one.
func (n *Node) removeImage(sb string) error {
	if !n.disks.present {
		return nil
	}
	if err := os.Remove(n.imagePath(sb)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// dropWorkspace removes what this node holds of sb's workspace (after a failed
// import, which makes it older than what the old owner had).
func (n *Node) dropWorkspace(sb string) {
	if err := n.removeImage(sb); err != nil {
		n.log.Error("actor: failed to remove a stale workspace image", "sandbox", sb, "err", err)
	}
	if err := os.RemoveAll(n.workspaceDir(sb)); err != nil {
		n.log.Error("actor: failed to remove a stale workspace", "sandbox", sb, "err", err)
	}
}

// sweepMoves removes what imports and drops (workspace_stale.go) a crash interrupted. It runs in Open, after
// openDisks unmounted what the crash left mounted.
func (n *Node) sweepMoves() {
	for _, dir := range []string{n.workspacesDir(), n.disksDir()} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if name := e.Name(); strings.HasPrefix(name, movePrefix) || strings.HasPrefix(name, stalePrefix) || runtime.UnpackTemp(name) {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					n.log.Error("actor: failed to remove an interrupted workspace import", "path", filepath.Join(dir, name), "err", err)
				}
			}
		}
	}
}

// noteImported remembers that sb's workspace arrived whole from its old owner: its
// next arrival here claims no workspace lost, even an empty one.
func (n *Node) noteImported(sb string) {
	n.mu.Lock()
	n.imported[sb] = struct{}{}
	n.mu.Unlock()
}

// takeImported reports and forgets whether noteImported was called for sb.
func (n *Node) takeImported(sb string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.imported[sb]
	delete(n.imported, sb)
	return ok
}

// syncPath fsyncs directory p.
func syncPath(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Workspaces lists the sandboxes that have a workspace directory or a disk image on
// this node, active or not, in no particular order: what a planned move of their
// partitions streams to the new owner. (Extension.)
func (n *Node) Workspaces() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if runtime.ValidID(id) && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	ents, err := os.ReadDir(n.workspacesDir())
	if err != nil {
		return nil, fmt.Errorf("actor: failed to list workspaces: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			add(e.Name())
		}
	}
	if n.disks.present {
		imgs, err := os.ReadDir(n.disksDir())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("actor: failed to list workspace images: %w", err)
		}
		for _, e := range imgs {
			if id, ok := strings.CutSuffix(e.Name(), ".img"); ok {
				add(id)
			}
		}
	}
	return out, nil
}
