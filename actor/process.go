package actor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Exec runs one command in the sandbox and waits for it. The turn only checks the
// sandbox (waking it from hibernation) and the process budget (an exec in flight counts
// as a process: a *BudgetError at MaxProcesses), and clamps the options: o.Timeout defaults to
// and is clamped to the budget's MaxExecTimeout, o.OutputLimit to OutputBufferBytes.
// The command itself runs off the actor, so the sandbox keeps serving other requests;
// it counts as activity until it ends.
func (n *Node) Exec(ctx context.Context, sb string, o runtime.ExecOptions) (runtime.ExecResult, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.ExecResult{}, err
	}
	type out struct {
		a  *sbActor
		rt *runtime.Sandbox
	}
	w, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.wakeForWork(); err != nil {
			return out{}, err
		}
		rt, err := a.runtime()
		if err != nil {
			return out{}, err
		}
		if err := a.checkProcessBudget(rt); err != nil {
			return out{}, err
		}
		o.Timeout = a.clampTimeout(o.Timeout)
		o.OutputLimit = a.outputLimit(o.OutputLimit)
		o.Cwd = a.defaultCwd(o.Cwd)
		a.inflight++
		a.sb.execs++
		return out{a, rt}, nil
	})
	if err != nil {
		return runtime.ExecResult{}, err
	}
	res, err := w.rt.Exec(ctx, o)
	w.a.finishWork(func(a *sbActor) (any, error) {
		a.inflight--
		if a.sb.execs > 0 {
			a.sb.execs--
		}
		a.touch()
		return nil, nil
	})
	if w.a.ended() {
		// The activation ended under the command (a fence, a move, a failed commit)
		// and killed it: what it returned is not the command's own outcome.
		return runtime.ExecResult{}, fmt.Errorf("%w: sandbox %q: its activation ended while the command ran; the command's outcome is unknown", ErrUnavailable, sb)
	}
	if err != nil {
		return res, fmt.Errorf("actor: sandbox %q: %w", sb, err)
	}
	return res, nil
}

// StartProcess starts a background process. With o.Session set, it starts from that
// session's saved cwd and exported env (ErrNotFound if there is no such session, a
// *DeadSessionError if it died). At the budget's MaxProcesses it fails with a
// *BudgetError (and a budget.denied event).
func (n *Node) StartProcess(ctx context.Context, sb string, o runtime.StartOptions) (runtime.ProcessInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.ProcessInfo{}, err
	}
	return call(ctx, n, sb, func(a *sbActor) (runtime.ProcessInfo, error) {
		if err := a.wakeForWork(); err != nil {
			return runtime.ProcessInfo{}, err
		}
		if o.Session != "" {
			st := a.sb.sessions[o.Session]
			if st == nil {
				return runtime.ProcessInfo{}, notFound("session", o.Session)
			}
			// A dead shell's state can no longer be trusted, as for its exec.
			if in := a.sessionInfo(st); in.Status == runtime.SessionStatus("dead") {
				return runtime.ProcessInfo{}, &DeadSessionError{ID: o.Session, Reason: in.DeadReason}
			}
			snap := st.snapshot()
			if o.Cwd == "" {
				// The shell's cwd may lie outside the workspace (cd /tmp): the
				// runtime takes it as the shell saw it.
				o.SessionCwd = snap.Cwd
			}
			env := maps.Clone(snap.Env)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, o.Env)
			o.Env = env
		}
		o.Cwd = a.defaultCwd(o.Cwd)
		rt, err := a.runtime()
		if err != nil {
			return runtime.ProcessInfo{}, err
		}
		if err := a.checkProcessBudget(rt); err != nil {
			return runtime.ProcessInfo{}, err
		}
		if err := a.indexRunning(); err != nil {
			return runtime.ProcessInfo{}, err
		}
		p, err := rt.Start(a.ctx(), o)
		if err != nil {
			// runtime's error already says "failed to start process".
			return runtime.ProcessInfo{}, fmt.Errorf("actor: sandbox %q: %w", a.id, a.startErr(err))
		}
		a.watch(p)
		if o.Keep > 0 {
			if a.sb.keep == nil {
				a.sb.keep = map[string]time.Duration{}
			}
			a.sb.keep[p.ID()] = o.Keep
		}
		a.saveRunning(p) // so a crash cannot leave it unrecorded (running.go)
		a.emit("process.created", processEventData(p.Info()))
		a.dirty = true
		return a.procInfo(p), nil // after process.created: a fast exit is recorded after it
	})
}

// processEventData is a process.created event's data: the process object's fields,
// null where the object has null.
func processEventData(in runtime.ProcessInfo) map[string]any {
	var argv any
	if in.Argv != nil {
		argv = in.Argv
	}
	return map[string]any{"id": in.ID, "pid": in.PID, "command": nullIfEmpty(in.Command), "argv": argv,
		"pty": in.PTY, "tag": nullIfEmpty(in.Tag), "session": nullIfEmpty(in.Session)}
}

// nullIfEmpty is s, or nil (JSON null) for "".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ListProcesses lists the sandbox's processes, oldest first: running ones and exited
// ones still kept (for their keep time after exit, also across hibernation,
// passivation, expiry and node restarts; see exited.go).
func (n *Node) ListProcesses(ctx context.Context, sb string) ([]runtime.ProcessInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	return call(ctx, n, sb, func(a *sbActor) ([]runtime.ProcessInfo, error) {
		if err := a.exists(); err != nil {
			return nil, err
		}
		return a.processList(), nil
	})
}

// Process returns the live handle of a process, for signal, input, resize, wait and
// output subscription. The handle is safe for concurrent use (runtime.Process). A
// process that exited before its sandbox's runtime ended (hibernation, passivation,
// expiry, a node restart) and is still kept has no handle: the error is then an
// *ExitedError holding its record (see ExitedProcess), which matches runtime.ErrExited.
func (n *Node) Process(ctx context.Context, sb, id string) (*runtime.Process, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	return call(ctx, n, sb, func(a *sbActor) (*runtime.Process, error) {
		if err := a.exists(); err != nil {
			return nil, err
		}
		p, err := a.process(id)
		if errors.Is(err, ErrNotFound) {
			if in, ok := a.savedExited(id); ok {
				return nil, &ExitedError{Sandbox: a.id, Info: in}
			}
		}
		return p, err
	})
}

// ProcessInfo returns a process as the API shows it: the live one's snapshot, or the
// saved record of one kept after its runtime ended. (Extension: the record Process
// returns in an *ExitedError.) The snapshot is taken in a turn, and an exit it shows is
// recorded in that turn, so once it says exited the event log has process.exited.
func (n *Node) ProcessInfo(ctx context.Context, sb, id string) (runtime.ProcessInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.ProcessInfo{}, err
	}
	return call(ctx, n, sb, func(a *sbActor) (runtime.ProcessInfo, error) {
		if err := a.exists(); err != nil {
			return runtime.ProcessInfo{}, err
		}
		p, err := a.process(id)
		if errors.Is(err, ErrNotFound) {
			if in, ok := a.savedExited(id); ok {
				return in, nil
			}
		}
		if err != nil {
			return runtime.ProcessInfo{}, err
		}
		return a.procInfo(p), nil
	})
}

// process returns the runtime's handle of process id, or a *NotFoundError.
func (a *sbActor) process(id string) (*runtime.Process, error) {
	if a.sb.rt == nil {
		return nil, notFound("process", id)
	}
	p, err := a.sb.rt.Process(id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil, notFound("process", id)
	}
	return p, err
}

// DeleteProcess kills the process's tree (SIGTERM, SIGKILL after the grace) and drops
// its record, the saved one too. The kill and wait run off the actor; a
// process.deleted event follows. A kept record whose runtime has ended is deleted in
// the turn.
func (n *Node) DeleteProcess(ctx context.Context, sb, id string) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	type out struct {
		a  *sbActor
		rt *runtime.Sandbox
	}
	w, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.exists(); err != nil {
			return out{}, err
		}
		if _, err := a.process(id); err != nil {
			if _, ok := a.savedExited(id); !ok || !errors.Is(err, ErrNotFound) {
				return out{}, err
			}
			a.forgetExited(id)
			a.emit("process.deleted", map[string]any{"id": id})
			a.touch()
			a.dirty = true
			return out{}, nil
		}
		a.touch()
		return out{a, a.sb.rt}, nil
	})
	if err != nil || w.rt == nil {
		return err
	}
	if err := w.rt.Remove(ctx, id); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return notFound("process", id)
		}
		return fmt.Errorf("actor: failed to delete process: %w", err)
	}
	_, err = ask(ctx, w.a, func(a *sbActor) (struct{}, error) {
		if a.rec != nil {
			if p := a.sb.procs[id]; p != nil { // exited before its watcher reported it
				a.recordExit(p)
				delete(a.sb.procs, id)
				delete(a.sb.keep, id)
			}
			a.forgetExited(id) // saved when it exited, if its watcher reported that first
			a.emit("process.deleted", map[string]any{"id": id})
			a.dirty = true
		}
		return struct{}{}, nil
	})
	return err
}
