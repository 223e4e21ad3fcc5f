package actor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files of deleted sandboxes (docs/design.md, "Deleting a sandbox").
//
// A delete removes the sandbox's workspace directory and disk image only once its
// batch is durable: removed in the delete turn, they were gone even when the commit
// then failed and the sandbox lived on. In order:
//
//  1. The delete turn writes a marker, DataDir/deleting/<id>, synced before the
//     batch is committed, then ends the sandbox's processes and unmounts its image. The marker says "if this sandbox has no record, its files here are
//     garbage"; it never says more, so it is safe whatever the commit's outcome.
//  2. The turn ends its group (endGroup): a request queued behind the delete, a create
//     of the same id above all, runs in the next group, after step 3.
//  3. Once the batch is durable, an after-commit step renames the directory and the
//     image aside (stalePrefix, one rename each) and deletes them, then the marker.
//  4. When the commit failed, nothing is removed. The next activation of the id loads
//     what storage settled (unsettled.go) and, with the marker there, removes the
//     files only if the record is gone; the marker goes either way once settled. If
//     no activation comes, the index worker, which re-reads the sandbox once the
//     failed activation has left (changed.go), removes them when it reads no record
//     (dropDeletedLocked).
//  5. What a crash or a failed removal leaves is found at the next Open
//     (sweepDeleted): a marker whose sandbox has no record has its files removed;
//     what was already aside goes with sweepMoves.
//
// A create with no record always starts by clearing whatever is at the id's paths
// and its marker (clearLeftover), and refuses to go on if it cannot: a sandbox
// created again under a deleted id never gets the old files, and once its create ran
// no marker of the old one is left to remove its new ones. An imported workspace
// (a planned move) drops the marker too: it is the living sandbox's. A marker acts
// only when the sandbox has no record, so it never removes the files of a sandbox
// that exists, whichever node runs it. Markers are kept per node, outside the
// workspaces directory, which Config.SharedWorkspaces lets nodes share.

// deletingDir holds the delete markers, one empty file per sandbox id. It is beside
// the workspaces directory, not in it: that one may be shared by every node
// (Config.SharedWorkspaces), and a marker says what this node left unfinished.
func (n *Node) deletingDir() string { return filepath.Join(n.cfg.DataDir, "deleting") }

func (n *Node) deletingPath(id string) string { return filepath.Join(n.deletingDir(), id) }

// markDeleting writes id's delete marker durably (step 1).
func (n *Node) markDeleting(id string) error {
	f, err := os.OpenFile(n.deletingPath(id), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("actor: failed to mark workspace of %q for removal: %w", id, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("actor: failed to mark workspace of %q for removal: %w", id, err)
	}
	if err := syncPath(n.deletingDir()); err != nil {
		return fmt.Errorf("actor: failed to mark workspace of %q for removal: %w", id, err)
	}
	return nil
}

// hasDeleting reports whether id has a delete marker.
func (n *Node) hasDeleting(id string) bool {
	_, err := os.Lstat(n.deletingPath(id))
	return err == nil
}

// removeDeleted removes id's workspace directory, image and marker: id's record is
// gone. The caller keeps every activation of id away (it is id's activation, or no
// activation has started yet). The marker goes last, so a failure leaves it for the
// next Open.
func (n *Node) removeDeleted(id string) error {
	if f := n.dropFault; f != nil {
		if err := f(id); err != nil {
			return err
		}
	}
	n.mu.Lock()
	aside, err := n.moveAsideLocked(id)
	n.mu.Unlock()
	if err = errors.Join(err, removeAside(aside)); err != nil {
		return err
	}
	return n.unmarkDeleting(id)
}

// unmarkDeleting removes id's delete marker, if any.
func (n *Node) unmarkDeleting(id string) error {
	if err := os.Remove(n.deletingPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("actor: failed to remove delete marker of %q: %w", id, err)
	}
	return nil
}

// afterDelete is step 3, run after the delete's commit. A failure is logged: the
// delete is durable and answered, and the next Open removes what is left.
func (a *sbActor) afterDelete() {
	if err := a.n.removeDeleted(a.id); err != nil {
		a.n.log.Error("actor: failed to remove the files of a deleted sandbox; the next start removes them",
			"sandbox", a.id, "err", err)
	}
}

// settleDeleted is step 4, run by load once storage has answered: with the record
// gone, a marked delete landed and its files go; with it there, it did not, and the
// files are the sandbox's.
func (a *sbActor) settleDeleted() {
	n := a.n
	if !n.hasDeleting(a.id) {
		return
	}
	if a.rec != nil {
		if err := n.unmarkDeleting(a.id); err != nil {
			n.log.Error("actor: failed to settle a delete", "sandbox", a.id, "err", err)
		}
		return
	}
	if err := n.removeDeleted(a.id); err != nil {
		n.log.Error("actor: failed to remove the files of a deleted sandbox", "sandbox", a.id, "err", err)
	}
}

// clearLeftover empties id's paths before a create: a deleted sandbox's files whose
// removal failed, a failed create's, or an earlier stay's. Nothing here is the new
// sandbox's.
func (a *sbActor) clearLeftover() error {
	if err := a.n.removeDeleted(a.id); err != nil {
		return fmt.Errorf("%w: sandbox %q: failed to clear an earlier workspace: %w", ErrUnavailable, a.id, err)
	}
	return nil
}

// sweepDeleted is step 5: it runs in Open, before any activation, and removes the
// files of each marked sandbox whose record is gone. A marked sandbox that still has
// a record keeps its files and its marker (a commit that did not land; its next
// activation settles it). A storage error keeps both.
func (n *Node) sweepDeleted(ctx context.Context) {
	ents, err := os.ReadDir(n.deletingDir())
	if err != nil {
		n.log.Error("actor: failed to look for deleted sandboxes' files", "err", err)
		return
	}
	for _, e := range ents {
		id := e.Name()
		if checkID("sandbox", id) != nil {
			continue
		}
		exists := false
		err := n.store.Read(ctx, id, func(r Reader) error {
			exists = r.Get(keyMeta) != nil
			return nil
		})
		if err != nil {
			n.log.Error("actor: failed to read a deleted sandbox's record", "sandbox", id, "err", err)
			continue
		}
		if exists {
			continue
		}
		if err := n.removeDeleted(id); err != nil {
			n.log.Error("actor: failed to remove the files of a deleted sandbox", "sandbox", id, "err", err)
		} else {
			n.log.Info("actor: removed the files a deleted sandbox left", "sandbox", id)
		}
	}
}

// dropDeletedLocked is step 4 for the index worker: it read no record of id, and no
// activation of id started since the read. If id is marked and no import of it is
// under way, it moves id's files aside, drops the marker and returns what the caller
// removes once n.mu is released (removeSettled). n.mu is held.
func (n *Node) dropDeletedLocked(id string) []string {
	if n.importing[id] > 0 || !n.hasDeleting(id) {
		return nil
	}
	aside, err := n.moveAsideLocked(id)
	if err == nil {
		err = n.unmarkDeleting(id)
	}
	if err != nil {
		n.log.Error("actor: failed to remove the files of a deleted sandbox", "sandbox", id, "err", err)
	}
	return aside
}

// removeSettled deletes what dropDeletedLocked moved aside; a failure leaves it to
// the next Open (sweepMoves).
func (n *Node) removeSettled(id string, aside []string) {
	if err := removeAside(aside); err != nil {
		n.log.Error("actor: failed to remove the files of a deleted sandbox", "sandbox", id, "err", err)
	}
}
