package actor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Exited process records.
//
// A process's record is listed for its keep time after it exits (StartOptions.Keep,
// runtime.DefaultKeep by default). The runtime keeps it in memory only while its
// runtime sandbox lives, and that ends at hibernation, passivation, expiry and node
// close. So when a process's exit is recorded, its final record is also saved under
// p/<id> with the time it may be dropped, and listed from there once the runtime that
// ran it is gone:
//
//  1. The exit turn (or endWork, for processes it ends) saves the record.
//  2. Activation loads the sandbox's saved records with its sessions and terminals; a
//     passivated sandbox holds none in memory.
//  3. ListProcesses and Process show the runtime's own record while it has one, else
//     the saved one. The runtime's ring is gone with it, so a saved record shows every
//     output byte as dropped (output_dropped = output_offset).
//  4. DeleteProcess deletes it; records past their keep time are pruned lazily, by the
//     turns that read them, by the alarm turn and when the actor passivates or closes.
//  5. A sandbox keeps at most Config.ExitedLimit exited records: saving one past it
//     drops the record of the process that exited longest ago, from storage and from
//     the runtime (whose record holds its output ring), as its keep time passing
//     would. Without this bound, a sandbox that starts short processes quickly would
//     store one record per process for the keep time. Dropping the oldest, rather than
//     refusing new processes, is what a user of ps expects: a process is never refused
//     because others exited.
//
// The keep time is measured on Config.Clock from when the actor recorded the exit.

// exitedRec is an exited process's saved record: the process object's fields, short
// keys to keep it small.
type exitedRec struct {
	ID        string    `json:"id"`
	PID       int       `json:"pid,omitempty"`
	Command   string    `json:"cmd,omitempty"`
	Argv      []string  `json:"argv,omitempty"`
	Cwd       string    `json:"cwd,omitempty"`
	PTY       bool      `json:"pty,omitempty"`
	Cols      uint16    `json:"cols,omitempty"`
	Rows      uint16    `json:"rows,omitempty"`
	Tag       string    `json:"tag,omitempty"`
	Label     string    `json:"label,omitempty"`
	Session   string    `json:"sess,omitempty"`
	Code      int       `json:"code"`
	Signal    string    `json:"sig,omitempty"`
	CreatedAt time.Time `json:"at"`
	ExitedAt  time.Time `json:"end"`
	Offset    int64     `json:"off,omitempty"`
	Until     time.Time `json:"until"` // Config.Clock time after which it is dropped
	// Running marks the record saved when the process started (running.go): its exit
	// is not recorded yet, and KeepMS is its keep time. Lost marks one recorded as
	// exited after a crash: its exit status is unknown.
	Running bool  `json:"run,omitempty"`
	Lost    bool  `json:"lost,omitempty"`
	KeepMS  int64 `json:"keep,omitempty"`
}

func (r *exitedRec) info() runtime.ProcessInfo {
	end := r.ExitedAt
	var exit *runtime.ExitStatus // unknown for a lost process: exit_code and signal null
	if !r.Lost {
		exit = &runtime.ExitStatus{Code: r.Code, Signal: r.Signal}
	}
	return runtime.ProcessInfo{
		ID: r.ID, Command: r.Command, Argv: slices.Clone(r.Argv), Cwd: r.Cwd, PID: r.PID, PTY: r.PTY,
		Cols: r.Cols, Rows: r.Rows, Tag: r.Tag, Label: r.Label, Session: r.Session,
		Status: runtime.StatusExited, Exit: exit,
		CreatedAt: r.CreatedAt, ExitedAt: &end, OutputOffset: r.Offset, OutputDropped: r.Offset,
	}
}

// keepFor returns how long the record of process id stays listed after its exit.
func (w *sandboxWork) keepFor(id string) time.Duration {
	if k := w.keep[id]; k > 0 {
		return k
	}
	return runtime.DefaultKeep
}

// saveExited saves p's final record, if it has exited, and forgets its keep time.
func (a *sbActor) saveExited(p *runtime.Process) {
	in := p.Info()
	keep := a.sb.keepFor(in.ID)
	delete(a.sb.keep, in.ID)
	if in.Exit == nil || in.ExitedAt == nil || a.rec == nil {
		return // not ended (its runtime failed to close): nothing true to save
	}
	r := &exitedRec{
		ID: in.ID, PID: in.PID, Command: in.Command, Argv: in.Argv, Cwd: in.Cwd, PTY: in.PTY, Cols: in.Cols,
		Rows: in.Rows, Tag: in.Tag, Label: in.Label, Session: in.Session, Code: in.Exit.Code,
		Signal: in.Exit.Signal, CreatedAt: in.CreatedAt, ExitedAt: *in.ExitedAt, Offset: in.OutputOffset,
		Until: a.now().Add(keep),
	}
	if a.sb.exited == nil {
		a.sb.exited = map[string]*exitedRec{}
	}
	a.sb.exited[r.ID] = r
	a.write().Put(idKey(pfxExited, r.ID), mustJSON(r)) // over its running record
	a.dropRunning(r.ID)
	a.trimExited()
}

// loadExited reads the saved records of exited processes (activation). Running
// records are of processes no runtime runs any more: they go to lost, for recordLost.
func (w *sandboxWork) loadExited(r Reader) error {
	var err error
	r.Scan(pfxExited, nil, func(_, v []byte) bool {
		rec := &exitedRec{}
		if err = json.Unmarshal(v, rec); err != nil {
			return false
		}
		if rec.Running {
			if w.lost == nil {
				w.lost = map[string]*exitedRec{}
			}
			w.lost[rec.ID] = rec
			return true
		}
		if w.exited == nil {
			w.exited = map[string]*exitedRec{}
		}
		w.exited[rec.ID] = rec
		return true
	})
	if err != nil {
		return fmt.Errorf("decode exited process: %w", err)
	}
	return nil
}

// pruneExited drops the saved records whose keep time has passed, and the oldest past
// Config.ExitedLimit (records loaded under a larger limit).
func (a *sbActor) pruneExited() {
	now := a.now()
	for id, r := range a.sb.exited {
		if !now.Before(r.Until) {
			delete(a.sb.exited, id)
			a.write().Delete(idKey(pfxExited, id))
		}
	}
	a.trimExited()
}

// trimExited drops the records of the processes that exited longest ago while the
// sandbox keeps more than Config.ExitedLimit, and the runtime's records of them.
func (a *sbActor) trimExited() {
	over := len(a.sb.exited) - a.n.cfg.ExitedLimit
	if over <= 0 {
		return
	}
	recs := slices.Collect(maps.Values(a.sb.exited))
	slices.SortFunc(recs, func(x, y *exitedRec) int {
		return cmp.Or(x.ExitedAt.Compare(y.ExitedAt), x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	for _, r := range recs[:over] {
		delete(a.sb.exited, r.ID)
		a.write().Delete(idKey(pfxExited, r.ID))
		a.dropFromRuntime(r.ID)
		a.n.exitedDropped.Add(1)
	}
}

// dropFromRuntime drops the runtime's record of process id if the runtime holds it and
// the process has exited (its tree is gone then, so this kills nothing and returns at
// once).
func (a *sbActor) dropFromRuntime(id string) {
	if a.sb.rt == nil {
		return
	}
	p, err := a.sb.rt.Process(id)
	if err != nil {
		return
	}
	select {
	case <-p.Done():
	default:
		return // running: not an exited record (cannot happen for a recorded exit)
	}
	if err := a.sb.rt.Remove(a.ctx(), id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		a.n.log.Warn("actor: failed to drop an exited process record", "sandbox", a.id, "process", id, "err", err)
	}
}

// forgetExited deletes process id's saved record (DELETE of the process), its running
// record too. It reports whether there was an exited one.
func (a *sbActor) forgetExited(id string) bool {
	if _, ok := a.sb.running[id]; ok {
		a.write().Delete(idKey(pfxExited, id))
		a.dropRunning(id)
	}
	if _, ok := a.sb.exited[id]; !ok {
		return false
	}
	delete(a.sb.exited, id)
	a.write().Delete(idKey(pfxExited, id))
	return true
}

// savedExited returns process id's saved record as the API shows it, if it is kept and
// the runtime has no record of its own.
func (a *sbActor) savedExited(id string) (runtime.ProcessInfo, bool) {
	a.pruneExited()
	r := a.sb.exited[id]
	if r == nil {
		return runtime.ProcessInfo{}, false
	}
	return r.info(), true
}

// processList is every listed process, oldest first: the runtime's (running, and
// exited ones it still keeps) and the saved records of the others.
func (a *sbActor) processList() []runtime.ProcessInfo {
	a.pruneExited()
	out := []runtime.ProcessInfo{}
	seen := map[string]bool{}
	if rt := a.sb.rt; rt != nil {
		// procInfo records exits it sees, and saving one may drop an older record from
		// the runtime (trimExited): what is listed is what the runtime holds after.
		all := rt.Processes()
		infos := make([]runtime.ProcessInfo, len(all))
		for i, p := range all {
			infos[i] = a.procInfo(p)
		}
		for i, p := range all {
			if q, err := rt.Process(p.ID()); err == nil && q == p {
				seen[p.ID()] = true
				out = append(out, infos[i])
			}
		}
	}
	for id, r := range a.sb.exited {
		if !seen[id] {
			out = append(out, r.info())
		}
	}
	slices.SortStableFunc(out, func(x, y runtime.ProcessInfo) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out
}
