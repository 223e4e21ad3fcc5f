package actor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sandgate/sandgate/actor/internal/diskimg"
	"github.com/sandgate/sandgate/runtime"
)

// sandboxWork is the runtime-backed part of a sandbox actor: the runtime sandbox, its
// processes, sessions and terminals. It is touched only by the actor goroutine. The
// runtime sandbox is made on first need and closed on hibernation, passivation, delete
// and node close; sessions and terminals are remembered (durably) across those and
// restarted from their records on the next request that needs them.
type sandboxWork struct {
	rt        *runtime.Sandbox
	procs     map[string]*runtime.Process // started, exit not yet recorded
	keep      map[string]time.Duration    // StartOptions.Keep of procs, where given
	exited    map[string]*exitedRec       // saved records of exited processes (exited.go)
	running   map[string]*exitedRec       // saved running records of procs (running.go)
	lost      map[string]*exitedRec       // running records found at activation, to record as exited
	sessions  map[string]*sessionState
	terminals map[string]*terminalState
	execs     int            // exec calls running, counted in the process budget
	disk      diskMeter      // cached workspace disk usage (usage.go)
	cgroup    cgroupMeter    // cached memory and pids usage (usage.go)
	mount     *diskimg.Mount // the workspace image, while mounted (disk.go)
	hasImage  bool           // the workspace is an image (mounted or not)
}

// load reads remembered sessions and terminals.
func (w *sandboxWork) load(a *sbActor, r Reader) error {
	var err error
	r.Scan(pfxSession, nil, func(_, v []byte) bool {
		st := &sessionState{}
		if err = json.Unmarshal(v, &st.rec); err != nil {
			return false
		}
		w.sessionMap()[st.rec.ID] = st
		return true
	})
	if err != nil {
		return fmt.Errorf("decode session: %w", err)
	}
	r.Scan(pfxTerminal, nil, func(_, v []byte) bool {
		st := &terminalState{}
		if err = json.Unmarshal(v, &st.rec); err != nil {
			return false
		}
		w.terminalMap()[st.rec.ID] = st
		return true
	})
	if err != nil {
		return fmt.Errorf("decode terminal: %w", err)
	}
	return w.loadExited(r)
}

func (w *sandboxWork) sessionMap() map[string]*sessionState {
	if w.sessions == nil {
		w.sessions = map[string]*sessionState{}
	}
	return w.sessions
}

func (w *sandboxWork) terminalMap() map[string]*terminalState {
	if w.terminals == nil {
		w.terminals = map[string]*terminalState{}
	}
	return w.terminals
}

// busy reports whether running work keeps the activation in memory: running processes
// and terminals, and live session shells (a shell may hold background jobs; closing it
// is hibernation's job, at the idle TTL, not passivation's).
func (w *sandboxWork) busy() bool {
	if len(w.procs) > 0 || (w.rt != nil && w.rt.Running() > 0) {
		return true
	}
	for _, st := range w.sessions {
		if st.live != nil {
			return true
		}
	}
	return false
}

// counts returns running processes (those whose exit is not recorded yet, so a count
// is never ahead of the event log), and remembered sessions and terminals.
func (w *sandboxWork) counts(a *sbActor) (procs, sessions, terminals int) {
	return len(w.procs), len(w.sessions), len(w.terminals)
}

// forget drops remembered sessions, terminals and exited processes (sandbox deleted).
func (w *sandboxWork) forget(a *sbActor) {
	if len(w.running) > 0 || len(w.lost) > 0 {
		a.releaseRunning() // the delete removes the records
	}
	w.sessions, w.terminals, w.procs, w.keep, w.exited, w.running, w.lost = nil, nil, nil, nil, nil, nil, nil
	w.disk = diskMeter{}
}

// runtime returns the sandbox's runtime, starting it if needed.
func (a *sbActor) runtime() (*runtime.Sandbox, error) {
	if a.sb.rt != nil {
		return a.sb.rt, nil
	}
	if err := a.mountDisk(); err != nil {
		return nil, err // the image is there but not reachable now: not a failed sandbox
	}
	cfg := a.runtimeConfig()
	rt, err := runtime.New(&cfg)
	if err != nil {
		// The sandbox cannot run anything: it is failed, with the reason, until deleted.
		a.fail(err.Error())
		return nil, fmt.Errorf("%w: sandbox %q failed: %w", ErrConflict, a.id, err)
	}
	a.setRuntime(rt)
	a.markFiles()
	return rt, nil
}

// runtimeConfig is the runtime configuration of the sandbox: its workspace, env and
// budget. The runtime's process cap is the operator's maximum, a backstop; the sandbox's
// budget, which a policy reload may change, is enforced by checkProcessBudget. Memory,
// pids and CPU are for a runtime driver that enforces them.
func (a *sbActor) runtimeConfig() runtime.Config {
	b := a.n.recBudget(a.rec.Budget)
	lim := runtime.Limits{MemoryBytes: b.MemoryBytes, Pids: b.Pids, CPUMillis: b.CPUMillis}.Enforceable()
	return runtime.Config{
		Dir: a.n.workspaceDir(a.id), Env: maps.Clone(a.rec.Env), MaxProcesses: a.n.cfg.Limits.MaxProcesses,
		OutputBufferBytes: b.OutputBufferBytes, KillGrace: a.n.cfg.KillGrace, Driver: a.n.cfg.Driver,
		ID: a.id, Scope: a.n.cfg.NodeID, // cgroups: sandgate-<node>/<sandbox>.<random>, swept by Open
		Network: string(b.Network), // the namespace driver's; the local one shares the host's
		// The limits this machine can enforce: Node.Open logs what is not.
		MemoryBytes: lim.MemoryBytes, Pids: lim.Pids, CPUMillis: lim.CPUMillis,
	}
}

// endWork ends every process of the sandbox (session shells and terminals included);
// sessions and terminals stay remembered. With record, a process.exited event is
// written, and the final record saved (exited.go), for every process whose exit was
// not recorded yet.
func (a *sbActor) endWork(record bool) {
	w := &a.sb
	ctx, cancel := context.WithTimeout(context.Background(), a.n.cfg.KillGrace+10*time.Second)
	defer cancel()
	for _, st := range w.sessions {
		if st.live != nil {
			_ = st.live.Close(ctx)
			st.live = nil
		}
	}
	for _, st := range w.terminals {
		a.syncTerminalSize(st) // the size survives; the shell does not
		st.proc = nil
	}
	if w.rt == nil {
		return
	}
	if err := w.rt.Close(ctx); err != nil {
		a.n.log.Error("actor: failed to close runtime", "sandbox", a.id, "err", err)
	}
	w.rt = nil
	w.cgroup = cgroupMeter{} // holds no closed runtime
	a.live.Store(nil)
	if record && a.rec != nil {
		for _, p := range w.procs {
			a.recordExit(p)
			a.saveExited(p)
		}
	}
	w.procs, w.keep = nil, nil
	a.dirty = true
}

// watch records p as running and posts its exit back to this activation.
func (a *sbActor) watch(p *runtime.Process) {
	if a.sb.procs == nil {
		a.sb.procs = map[string]*runtime.Process{}
	}
	a.sb.procs[p.ID()] = p
	a.n.wg.Add(1) // the actor goroutine holds a count, so this never races Close's Wait
	go func() {
		defer a.n.wg.Done()
		<-p.Done()
		a.postSelf(func(a *sbActor) (any, error) {
			a.reap(p)
			return nil, nil
		})
	}()
}

// reap records the exit of p in this turn, if it is one of the sandbox's processes whose
// exit is not recorded yet: process.exited is written and its final record saved.
// Whichever comes first does it, the watcher's turn or a turn that shows p.
func (a *sbActor) reap(p *runtime.Process) {
	if a.sb.procs[p.ID()] != p {
		return
	}
	for _, st := range a.sb.terminals {
		if st.proc == p {
			a.syncTerminalSize(st)
		}
	}
	a.recordExit(p)
	a.saveExited(p)
	delete(a.sb.procs, p.ID())
	a.dirty = true
}

// procInfo returns p as the API shows it. The runtime learns of an exit before the
// watcher's turn records it; a turn that shows an exited process records the exit
// itself, so the reply, released after the commit, is never ahead of the event log.
func (a *sbActor) procInfo(p *runtime.Process) runtime.ProcessInfo {
	in := p.Info()
	if in.Status == runtime.StatusExited {
		a.reap(p)
	}
	return in
}

func (a *sbActor) recordExit(p *runtime.Process) {
	in := p.Info()
	data := map[string]any{"id": in.ID, "exit_code": nil, "signal": nil}
	switch {
	case in.Exit == nil:
	case in.Exit.Signal != "": // as the process object: a signal, and no exit code
		data["signal"] = in.Exit.Signal
	default:
		data["exit_code"] = in.Exit.Code
	}
	a.emit("process.exited", data)
}

// checkProcessBudget refuses a new process at the sandbox's MaxProcesses, recording a
// budget.denied event. Everything that runs counts: processes and terminals, exec calls
// in flight and live session shells.
func (a *sbActor) checkProcessBudget(rt *runtime.Sandbox) error {
	limit := a.rec.Budget.MaxProcesses
	inUse := rt.Running() + a.sb.execs
	for _, st := range a.sb.sessions {
		if st.live != nil {
			inUse++
		}
	}
	if inUse >= limit {
		return a.denied(limit)
	}
	return nil
}

func (a *sbActor) denied(limit int) error {
	a.emit("budget.denied", map[string]any{"budget": "max_processes", "limit": limit})
	return &BudgetError{Budget: "max_processes", Limit: limit}
}

// startErr maps runtime start errors: the runtime's own process cap is a budget denial.
func (a *sbActor) startErr(err error) error {
	if errors.Is(err, runtime.ErrTooManyProcesses) {
		return a.denied(a.rec.Budget.MaxProcesses)
	}
	return err
}

// clampTimeout applies the sandbox's MaxExecTimeout: 0 or more → the maximum.
func (a *sbActor) clampTimeout(d time.Duration) time.Duration {
	max := a.rec.Budget.budget().MaxExecTimeout
	if d <= 0 || d > max {
		return max
	}
	return d
}

func (a *sbActor) outputLimit(l int) int {
	max := a.rec.Budget.OutputBufferBytes
	if l <= 0 || l > max {
		return max
	}
	return l
}

// defaultCwd returns cwd, or the sandbox's cwd when empty.
func (a *sbActor) defaultCwd(cwd string) string {
	if cwd == "" {
		return a.rec.Cwd
	}
	return cwd
}
