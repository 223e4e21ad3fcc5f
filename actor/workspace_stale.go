package actor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Copies of a workspace that are not the sandbox's (docs/design.md, "Leftover
// workspaces"). Workspaces are node-local, so a node keeps what a sandbox wrote here
// after the sandbox moved on. Such a copy is older than the one the sandbox went on
// writing elsewhere, and is removed:
//
//   - by the gateway, on the old owner, once a planned move delivered the workspace
//     to the new owner and can no longer be aborted (Node.DropWorkspace);
//   - by the sandbox's next activation here, before it runs and before its image is
//     mounted, when the sandbox arrives from another node and its workspace did not
//     come with it by a planned move's stream (dropStale). arrive then finds the
//     workspace empty and names it lost, as after a crash. Without this a failover
//     back to a node that kept an old copy would serve that copy as current.
//
// Neither runs when Config.SharedWorkspaces says every node sees the same directory.
// Removal renames the directory and the image aside first (one rename each, so
// nothing ever activates on half a workspace) and then deletes them; what a crash
// leaves aside is removed when the node starts (sweepMoves).

// stalePrefix starts the names of workspaces and images being removed; no sandbox id
// starts with a dot.
const stalePrefix = ".stale-"

// DropWorkspace removes sandbox sb's workspace directory and disk image from this
// node: the caller knows the copy here is not the sandbox's any more (its planned
// move to another node completed). It refuses, with ErrUnavailable, a sandbox active
// on this node or whose workspace is being imported; a sandbox with nothing here is
// not an error. The caller makes sure nothing activates sb meanwhile (in a cluster,
// this node does not own it). It runs in the background of a move, so it waits up to
// moveDiskWait, or until ctx is done, for the loop device of the image's last mount to
// let the image go. (Extension.)
func (n *Node) DropWorkspace(ctx context.Context, sb string) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	if err := n.releasedImage(ctx, sb, moveDiskWait); err != nil {
		return err
	}
	n.mu.Lock()
	if n.actors[sb] != nil || n.importing[sb] > 0 {
		n.mu.Unlock()
		return fmt.Errorf("%w: sandbox %q is active or arriving on this node: its workspace stays", ErrUnavailable, sb)
	}
	delete(n.imported, sb)
	aside, err := n.moveAsideLocked(sb)
	n.mu.Unlock()
	return errors.Join(err, removeAside(aside))
}

// dropStale removes the workspace this node holds of a sandbox that arrives from
// another node without its workspace having come by a planned move's stream. It runs
// in the activation, after load and before the image is mounted or any turn.
func (a *sbActor) dropStale() {
	n := a.n
	if a.rec == nil || a.rec.Node == "" || a.rec.Node == n.cfg.NodeID || n.cfg.SharedWorkspaces || n.hasImported(a.id) {
		return
	}
	if err := n.releasedImage(a.ctx(), a.id, n.disks.wait); err != nil {
		n.log.Error("actor: failed to remove a leftover workspace", "sandbox", a.id, "err", err)
		return
	}
	n.mu.Lock()
	aside, err := n.moveAsideLocked(a.id)
	n.mu.Unlock()
	if err = errors.Join(err, removeAside(aside)); err != nil {
		n.log.Error("actor: failed to remove a leftover workspace", "sandbox", a.id, "err", err)
	} else if len(aside) > 0 {
		n.log.Info("removed the workspace an earlier stay left: the sandbox arrived without it",
			"sandbox", a.id, "from", a.rec.Node)
	}
}

// releasedImage waits until no earlier mount holds sb's image, if it has one (see
// diskImages.released).
func (n *Node) releasedImage(ctx context.Context, sb string, wait time.Duration) error {
	if !n.disks.present {
		return nil
	}
	return n.disks.released(ctx, sb, n.imagePath(sb), wait)
}

// moveAsideLocked renames sb's workspace directory and image, those that exist, to
// stale names and returns them. n.mu is held: no activation starts meanwhile.
func (n *Node) moveAsideLocked(sb string) ([]string, error) {
	tag := stalePrefix + sb + "-" + fmt.Sprintf("%x", time.Now().UnixNano())
	moves := [][2]string{{n.workspaceDir(sb), filepath.Join(n.workspacesDir(), tag)}}
	if n.disks.present {
		moves = append(moves, [2]string{n.imagePath(sb), filepath.Join(n.disksDir(), tag+".img")})
	}
	var aside []string
	var errs []error
	for _, m := range moves {
		err := os.Rename(m[0], m[1])
		switch {
		case err == nil:
			aside = append(aside, m[1])
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("actor: failed to remove workspace of %q: %w", sb, err))
		}
	}
	return aside, errors.Join(errs...)
}

// removeAside deletes what moveAsideLocked renamed.
func removeAside(paths []string) error {
	var errs []error
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("actor: failed to remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// hasImported reports whether sb's workspace arrived whole from its old owner and
// its activation has not taken that news yet (noteImported).
func (n *Node) hasImported(sb string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.imported[sb]
	return ok
}

// beginImport marks sb's workspace as being imported, unless sb is active here.
func (n *Node) beginImport(sb string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.actors[sb] != nil {
		return false
	}
	n.importing[sb]++
	return true
}

// endImport undoes beginImport.
func (n *Node) endImport(sb string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.importing[sb]--; n.importing[sb] <= 0 {
		delete(n.importing, sb)
	}
}
