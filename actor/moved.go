package actor

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// Sandboxes that moved between nodes (docs/design.md, "Fencing").
//
// The sandbox record names the node that last activated it (sandboxRec.Node). When
// another node activates it, the first turn of that activation (arrive) posts
// sandbox.moved {"from": old node, "to": this node, "lost": [...], "planned": bool}
// and records the node's own id. lost lists what did not come along:
//
//   - "processes": processes were recorded running (running.go), so the old node
//     ended them unseen (it crashed, or was fenced). Each is recorded as exited with
//     reason "owner_lost", as a crash of this node records "server_crashed".
//   - "workspace": the workspace directory here is missing or empty while the old
//     node's may have held files. The rule is cheap and errs towards claiming a loss:
//     the record's Files flag is set, with one write, the first time the sandbox
//     gets work that can write files (a runtime is started: exec, processes,
//     sessions, terminals; or its workspace is opened; or it was created with a cwd)
//     and cleared when it arrives on a node with an empty workspace. So a sandbox
//     that only ever had events and messages claims no workspace, and one whose
//     processes wrote nothing claims one. A workspace found here is taken as current
//     only when nodes share the workspaces directory (Config.SharedWorkspaces); when
//     they do not, one that did not arrive by a stream is what an earlier stay on this
//     node left, older than what the old node had: the activation removed it before
//     this turn (workspace_stale.go), so it is claimed lost.
//
// A planned move (Node.Deactivate) ends processes cleanly, recording their exits,
// and marks the record Left, so "planned" is true; "processes" is claimed when it
// ended some (the record's Ended), since they do not run on here. Its workspace comes
// along when the old owner streamed it (Node.ExportWorkspace, ImportWorkspace): an
// import that arrived whole is never claimed lost, even when it is empty, and one that
// failed left no workspace here, so the rule above claims it.
// A record made before Node existed is not reported as moved.

// ownerLostReason is the reason of process.exited for a process whose end its node
// did not record because it lost the sandbox: it was fenced, or the sandbox moved.
const ownerLostReason = "owner_lost"

// mustArrive reports whether the activation's first turn must be arrive: it records
// lost processes, or the sandbox's last node was another one, or left it for a move.
func (a *sbActor) mustArrive() bool {
	return len(a.sb.lost) > 0 || (a.rec != nil && (a.rec.Node != a.n.cfg.NodeID || a.rec.Left))
}

// arrive is the first turn of an activation that mustArrive.
func (a *sbActor) arrive() {
	reason := lostReason
	if a.n.takeHalted(a.id) {
		reason = ownerLostReason // this node ended them unseen, when it was fenced
	}
	if a.rec == nil {
		a.recordLost(reason)
		return
	}
	self, from := a.n.cfg.NodeID, a.rec.Node
	if from != "" && from != self {
		lost := []string{}
		if len(a.sb.lost) > 0 {
			lost = append(lost, "processes")
			reason = ownerLostReason
		} else if a.rec.Left && a.rec.Ended {
			lost = append(lost, "processes") // ended by the move, their exits recorded
		}
		dir := a.n.workspaceDir(a.id)
		empty := dirEmpty(dir)
		if empty && a.rec.Files && !a.n.takeImported(a.id) {
			lost = append(lost, "workspace")
		}
		if empty {
			a.rec.Files = a.rec.Cwd != ""
			if err := os.MkdirAll(dir, 0o755); err != nil {
				a.n.log.Error("actor: failed to create the workspace of a moved sandbox", "sandbox", a.id, "err", err)
			} else if err := makeCwd(dir, a.rec.Cwd); err != nil {
				a.n.log.Error("actor: failed to create the cwd of a moved sandbox", "sandbox", a.id, "err", err)
			}
		}
		a.emit("sandbox.moved", map[string]any{"from": from, "to": self, "lost": lost, "planned": a.rec.Left})
	}
	a.recordLost(reason)
	a.n.takeImported(a.id)
	if from != self || a.rec.Left {
		a.rec.Node, a.rec.Left, a.rec.Ended = self, false, false
		a.saveRec()
		a.dirty = true
	}
}

// markFiles records, once, that the workspace may now hold files.
func (a *sbActor) markFiles() {
	if a.rec != nil && !a.rec.Files {
		a.rec.Files = true
		a.saveRec()
	}
}

// dirEmpty reports whether dir is missing or has no entries. An unreadable directory
// counts as not empty: nothing is claimed lost that may be there.
func dirEmpty(dir string) bool {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// noteHalted remembers that sandbox id was halted with processes running, unrecorded.
func (n *Node) noteHalted(id string) {
	n.mu.Lock()
	n.haltedRuns[id] = struct{}{}
	n.mu.Unlock()
}

// takeHalted reports and forgets whether noteHalted was called for id.
func (n *Node) takeHalted(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.haltedRuns[id]
	delete(n.haltedRuns, id)
	return ok
}
