package actor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Processes running at a crash (docs/design.md, "Processes running at a crash").
//
// A clean stop ends every process and records its exit (endWork). A crash records
// nothing, so what was running must already be on disk:
//
//  1. Before a process or terminal shell starts, its sandbox is put in the node's run
//     index (runIndex, a node-wide record), durably; then the turn that writes
//     process.created also saves the process's record as running (exitedRec with
//     Running set, under p/<id>). So every running record has an index entry.
//  2. When its exit is recorded, the same key becomes the exited record (exited.go).
//     Once a sandbox holds no running record, its index entry is marked stale, after
//     that commit; stale entries are deleted with the index's next write and at Close.
//  3. Open activates exactly the indexed sandboxes. Activation finds the running
//     records of processes no runtime of this node runs any more (a crash, or an
//     activation dropped after a failed commit) and a turn records each as exited:
//     process.exited with exit_code and signal null and reason "server_crashed", and
//     the record becomes an exited one kept for its keep time from then.
//
// The processes themselves are not touched here.

// lostReason is the reason of a process.exited event recorded for a process whose
// end the server did not see.
const lostReason = "server_crashed"

// pfxRunIndex holds the run index in nodeRecords: run/<sandbox> → "".
var pfxRunIndex = []byte("run/")

// runIndex is the node's index of sandboxes whose storage may hold running records.
// Every sandbox with a running record is in it; it may list more. Safe for concurrent
// use: mu is held across its durable writes, which are rare (a sandbox's first
// process since the index last dropped it, and Close).
type runIndex struct {
	mu     sync.Mutex      // protects following
	listed map[string]bool // durable entries
	stale  map[string]bool // listed, but the sandbox holds no running record now
}

// load reads the index (Open) and returns the listed sandboxes.
func (x *runIndex) load(ctx context.Context, st Storage) ([]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.listed, x.stale = map[string]bool{}, map[string]bool{}
	var ids []string
	err := st.Read(ctx, nodeRecords, func(r Reader) error {
		r.Scan(pfxRunIndex, nil, func(k, _ []byte) bool {
			id := string(k[len(pfxRunIndex):])
			x.listed[id] = true
			ids = append(ids, id)
			return true
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("actor: failed to read run index: %w", err)
	}
	return ids, nil
}

// add makes sure sandbox id is durably listed, deleting stale entries in the same write.
func (x *runIndex) add(st Storage, id string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.listed[id] {
		delete(x.stale, id)
		return nil
	}
	b := x.batchLocked()
	b.Put(idKey(pfxRunIndex, id), []byte{})
	if err := st.Write(context.Background(), b); err != nil {
		return fmt.Errorf("actor: failed to save run index: %w", err)
	}
	x.clearStaleLocked()
	x.listed[id] = true
	return nil
}

// release marks id's entry stale. Call it only once a commit left id without running
// records.
func (x *runIndex) release(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.listed[id] {
		x.stale[id] = true
	}
}

// flush deletes the stale entries.
func (x *runIndex) flush(st Storage) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.stale) == 0 {
		return nil
	}
	if err := st.Write(context.Background(), x.batchLocked()); err != nil {
		return fmt.Errorf("actor: failed to save run index: %w", err)
	}
	x.clearStaleLocked()
	return nil
}

// batchLocked returns a node-records batch deleting the stale entries.
func (x *runIndex) batchLocked() *Batch {
	if x.listed == nil {
		x.listed, x.stale = map[string]bool{}, map[string]bool{}
	}
	b := &Batch{Sandbox: nodeRecords}
	for id := range x.stale {
		b.Delete(idKey(pfxRunIndex, id))
	}
	return b
}

func (x *runIndex) clearStaleLocked() {
	for id := range x.stale {
		delete(x.listed, id)
	}
	clear(x.stale)
}

// recoverRunning activates every sandbox of the run index (Open), so that processes
// it recorded as running before a crash are recorded as exited without waiting for a
// request. Activation does the recording (loadRunning); a sandbox left with nothing
// running gets its entry dropped. Errors are logged: the sandboxes concerned are
// recovered on their next activation.
func (n *Node) recoverRunning(ctx context.Context) {
	ids, err := n.runIdx.load(ctx, n.store)
	if err != nil {
		n.log.Error("actor: processes running at the last stop are not recorded as exited until their sandboxes wake", "err", err)
		return
	}
	for _, id := range ids {
		n.post(id, func(a *sbActor) (any, error) {
			a.releaseRunning()
			return nil, nil
		})
	}
	if len(ids) > 0 {
		n.log.Info("actor: recording processes that ran at the last stop", "sandboxes", len(ids))
	}
}

// indexRunning lists the sandbox in the run index before it starts a process. If the
// start fails, the entry is released again after this group's commit.
func (a *sbActor) indexRunning() error {
	if err := a.n.runIdx.add(a.n.store, a.id); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	a.releaseRunning()
	return nil
}

// saveRunning saves p's record as running, in the turn that writes process.created.
func (a *sbActor) saveRunning(p *runtime.Process) {
	in := p.Info()
	r := &exitedRec{
		ID: in.ID, PID: in.PID, Command: in.Command, Argv: in.Argv, Cwd: in.Cwd, PTY: in.PTY, Cols: in.Cols,
		Rows: in.Rows, Tag: in.Tag, Label: in.Label, Session: in.Session, CreatedAt: in.CreatedAt,
		Running: true, KeepMS: a.sb.keepFor(in.ID).Milliseconds(),
	}
	if a.sb.running == nil {
		a.sb.running = map[string]*exitedRec{}
	}
	a.sb.running[r.ID] = r
	a.write().Put(idKey(pfxExited, r.ID), mustJSON(r))
}

// dropRunning forgets process id's running record (its key is overwritten or deleted
// by the caller in this turn) and releases the index entry once none is left.
func (a *sbActor) dropRunning(id string) {
	if _, ok := a.sb.running[id]; !ok {
		return
	}
	delete(a.sb.running, id)
	a.releaseRunning()
}

// releaseRunning marks the sandbox's index entry stale after this group commits, if
// it holds no running record by then.
func (a *sbActor) releaseRunning() {
	a.afterCommit(func() {
		if len(a.sb.running) == 0 && len(a.sb.lost) == 0 {
			a.n.runIdx.release(a.id)
		}
	})
}

// recordLost records as exited, once, the processes whose running records an
// activation found: no runtime of this node runs them (a crash or a dropped
// activation ended them unseen). reason is the process.exited events' reason. It runs
// in the first turn after load (arrive).
func (a *sbActor) recordLost(reason string) {
	if len(a.sb.lost) == 0 {
		return
	}
	now := a.now()
	for _, r := range a.sb.lost {
		r.Running, r.Lost = false, true
		r.ExitedAt = now.UTC()
		keep := time.Duration(r.KeepMS) * time.Millisecond
		if keep <= 0 {
			keep = runtime.DefaultKeep
		}
		r.Until, r.KeepMS = now.Add(keep), 0
		a.emit("process.exited", map[string]any{"id": r.ID, "exit_code": nil, "signal": nil, "reason": reason})
		if a.sb.exited == nil {
			a.sb.exited = map[string]*exitedRec{}
		}
		a.sb.exited[r.ID] = r
		a.write().Put(idKey(pfxExited, r.ID), mustJSON(r))
	}
	a.sb.lost = nil
	a.trimExited()
	a.dirty = true
	a.releaseRunning()
}
