package actor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TerminalSpec is a terminal get-or-create request. Zero Cols/Rows mean 80x24.
type TerminalSpec struct {
	Cols, Rows uint16
	Cwd        string
	Env        map[string]string
	Shell      string
}

// TerminalInfo is a terminal as the API shows it. Status is "running" or "exited": a
// terminal whose shell ended (exit in it, or ended by hibernation or a node restart) is
// "exited", and the next PUT or GET starts a new shell with its saved settings. Process
// is the shell's process id, or "" when no shell was started in this activation (after
// hibernation or a restart). Cols and Rows are the latest size, which is saved.
type TerminalInfo struct {
	ID, Process, Status string
	Cols, Rows          uint16
	CreatedAt           time.Time
	Attached            int
	OutputOffset        int64
}

type terminalRec struct {
	ID        string            `json:"id"`
	Cols      uint16            `json:"cols"`
	Rows      uint16            `json:"rows"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Shell     string            `json:"shell,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
}

type terminalState struct {
	rec  terminalRec
	proc *runtime.Process // nil: not started in this activation
	// seen is proc's size as last copied into rec. A WebSocket client resizes proc
	// directly, without a turn, so syncTerminalSize compares against it to tell that
	// change from a resize recorded since (POST resize of an exited shell).
	seen runtime.WinSize
}

// terminalInfo returns st as the API shows it, saving a size changed outside a turn.
func (a *sbActor) terminalInfo(st *terminalState) TerminalInfo {
	a.syncTerminalSize(st)
	in := TerminalInfo{ID: st.rec.ID, Status: string(runtime.StatusExited), Cols: st.rec.Cols, Rows: st.rec.Rows,
		CreatedAt: st.rec.CreatedAt}
	if st.proc != nil {
		pi := a.procInfo(st.proc)
		in.Process, in.Status, in.OutputOffset, in.Attached = pi.ID, string(pi.Status), pi.OutputOffset, st.proc.Attached()
	}
	return in
}

// syncTerminalSize copies the shell's PTY size into st's record, and storage, when it
// changed since it was last seen: clients resize the PTY over WebSocket without a turn,
// and the size must survive hibernation and restarts. It is called in every turn that
// shows or resizes the terminal, when its shell exits, and before work is ended.
func (a *sbActor) syncTerminalSize(st *terminalState) {
	if st.proc == nil {
		return
	}
	pi := st.proc.Info()
	now := runtime.WinSize{Cols: pi.Cols, Rows: pi.Rows}
	if now.Cols == 0 || now.Rows == 0 || now == st.seen {
		return
	}
	st.seen = now
	if st.rec.Cols != now.Cols || st.rec.Rows != now.Rows {
		st.rec.Cols, st.rec.Rows = now.Cols, now.Rows
		a.saveTerminal(st)
	}
}

func (a *sbActor) saveTerminal(st *terminalState) {
	a.write().Put(idKey(pfxTerminal, st.rec.ID), mustJSON(st.rec))
}

func (st *terminalState) running() bool {
	if st.proc == nil {
		return false
	}
	select {
	case <-st.proc.Done():
		return false
	default:
		return true
	}
}

// startTerminal starts st's PTY shell.
func (a *sbActor) startTerminal(st *terminalState) error {
	rt, err := a.runtime()
	if err != nil {
		return err
	}
	if err := a.checkProcessBudget(rt); err != nil {
		return err
	}
	if err := a.indexRunning(); err != nil {
		return err
	}
	p, err := rt.StartTerminal(a.ctx(), runtime.TerminalOptions{ID: st.rec.ID, Cols: st.rec.Cols, Rows: st.rec.Rows,
		Cwd: a.defaultCwd(st.rec.Cwd), Env: maps.Clone(st.rec.Env), Shell: st.rec.Shell})
	if err != nil {
		// runtime's error already says "failed to start terminal".
		return fmt.Errorf("actor: sandbox %q: %w", a.id, a.startErr(err))
	}
	st.proc, st.seen = p, runtime.WinSize{Cols: st.rec.Cols, Rows: st.rec.Rows}
	a.watch(p)
	a.saveRunning(p) // so a crash cannot leave it unrecorded (running.go)
	a.emit("process.created", processEventData(p.Info()))
	a.dirty = true
	return nil
}

// PutTerminal gets or creates terminal id: a turn, so any number of concurrent calls
// make exactly one PTY. An existing terminal whose shell is not running (exited, or
// stopped by hibernation) is restarted with its saved settings (created=false).
func (n *Node) PutTerminal(ctx context.Context, sb, id string, s TerminalSpec) (TerminalInfo, bool, error) {
	if err := checkID("sandbox", sb); err != nil {
		return TerminalInfo{}, false, err
	}
	if err := checkID("terminal", id); err != nil {
		return TerminalInfo{}, false, err
	}
	if s.Cols == 0 || s.Rows == 0 {
		s.Cols, s.Rows = 80, 24
	}
	type out struct {
		info    TerminalInfo
		created bool
	}
	o, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.wakeForWork(); err != nil {
			return out{}, err
		}
		if st := a.sb.terminals[id]; st != nil {
			if !st.running() {
				if err := a.startTerminal(st); err != nil {
					return out{}, err
				}
			}
			return out{info: a.terminalInfo(st)}, nil
		}
		if err := a.checkKept("max_terminals", len(a.sb.terminals), a.n.cfg.TerminalLimit); err != nil {
			return out{}, err // a new id past the terminals a sandbox remembers (kept.go)
		}
		st := &terminalState{rec: terminalRec{ID: id, Cols: s.Cols, Rows: s.Rows, Cwd: s.Cwd, Env: maps.Clone(s.Env),
			Shell: s.Shell, CreatedAt: a.now().UTC()}}
		if err := a.startTerminal(st); err != nil {
			return out{}, err
		}
		a.sb.terminalMap()[id] = st
		a.saveTerminal(st)
		a.rec.Terminals = len(a.sb.terminals)
		a.saveRec()
		a.emit("terminal.created", map[string]any{"id": id, "process": st.proc.ID()})
		return out{info: a.terminalInfo(st), created: true}, nil
	})
	return o.info, o.created, err
}

// ListTerminals lists the sandbox's terminals by creation time.
func (n *Node) ListTerminals(ctx context.Context, sb string) ([]TerminalInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	return call(ctx, n, sb, func(a *sbActor) ([]TerminalInfo, error) {
		if err := a.exists(); err != nil {
			return nil, err
		}
		out := make([]TerminalInfo, 0, len(a.sb.terminals))
		for _, st := range a.sb.terminals {
			out = append(out, a.terminalInfo(st))
		}
		slices.SortFunc(out, func(x, y TerminalInfo) int { return x.CreatedAt.Compare(y.CreatedAt) })
		return out, nil
	})
}

// GetTerminal returns the terminal and its live process, restarting a stopped or
// exited shell (waking a hibernated sandbox) so a client can attach to it.
func (n *Node) GetTerminal(ctx context.Context, sb, id string) (TerminalInfo, *runtime.Process, error) {
	if err := checkID("sandbox", sb); err != nil {
		return TerminalInfo{}, nil, err
	}
	type out struct {
		info TerminalInfo
		p    *runtime.Process
	}
	o, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.exists(); err != nil {
			return out{}, err
		}
		st := a.sb.terminals[id]
		if st == nil {
			return out{}, notFound("terminal", id)
		}
		if !st.running() {
			if err := a.wakeForWork(); err != nil {
				return out{}, err
			}
			if err := a.startTerminal(st); err != nil {
				return out{}, err
			}
		}
		a.touch()
		return out{a.terminalInfo(st), st.proc}, nil
	})
	return o.info, o.p, err
}

// ResizeTerminal sets the terminal's window size (and saves it for restarts).
func (n *Node) ResizeTerminal(ctx context.Context, sb, id string, cols, rows uint16) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	if cols == 0 || rows == 0 {
		return fmt.Errorf("%w: terminal size %dx%d", ErrInvalid, cols, rows)
	}
	_, err := call(ctx, n, sb, func(a *sbActor) (struct{}, error) {
		if err := a.exists(); err != nil {
			return struct{}{}, err
		}
		st := a.sb.terminals[id]
		if st == nil {
			return struct{}{}, notFound("terminal", id)
		}
		a.syncTerminalSize(st) // a size set over WebSocket before this one is older
		if st.running() {
			if err := st.proc.Resize(cols, rows); err != nil {
				return struct{}{}, fmt.Errorf("actor: terminal %q: %w", id, err) // runtime says "failed to resize"
			}
			st.seen = runtime.WinSize{Cols: cols, Rows: rows}
		}
		st.rec.Cols, st.rec.Rows = cols, rows
		a.saveTerminal(st)
		a.touch()
		return struct{}{}, nil
	})
	return err
}

// DeleteTerminal kills the terminal's shell (attached clients see its exit) and forgets
// the terminal.
func (n *Node) DeleteTerminal(ctx context.Context, sb, id string) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	type out struct {
		rt *runtime.Sandbox
		p  *runtime.Process
	}
	o, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.exists(); err != nil {
			return out{}, err
		}
		st := a.sb.terminals[id]
		if st == nil {
			return out{}, notFound("terminal", id)
		}
		delete(a.sb.terminals, id)
		a.write().Delete(idKey(pfxTerminal, id))
		a.rec.Terminals = len(a.sb.terminals)
		a.saveRec()
		a.emit("terminal.deleted", map[string]any{"id": id})
		a.touch()
		a.dirty = true
		return out{a.sb.rt, st.proc}, nil
	})
	if err != nil || o.p == nil {
		return err
	}
	if err := o.rt.Remove(ctx, o.p.ID()); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("actor: failed to kill terminal: %w", err)
	}
	return nil
}
