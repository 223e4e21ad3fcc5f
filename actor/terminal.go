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

// TerminalInfo is a terminal as the API shows it. Status is "running", "exited" (the
// shell ended; the next PUT or GET starts a new one) or "stopped" (remembered across
// hibernation or a node restart; the next PUT or GET restarts it).
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
	proc *runtime.Process // nil: not running in this activation
}

func (st *terminalState) info() TerminalInfo {
	in := TerminalInfo{ID: st.rec.ID, Status: "stopped", Cols: st.rec.Cols, Rows: st.rec.Rows, CreatedAt: st.rec.CreatedAt}
	if st.proc != nil {
		pi := st.proc.Info()
		in.Process, in.Status, in.OutputOffset, in.Attached = pi.ID, string(pi.Status), pi.OutputOffset, st.proc.Attached()
		if pi.Cols != 0 {
			in.Cols, in.Rows = pi.Cols, pi.Rows
		}
	}
	return in
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
	p, err := rt.StartTerminal(a.ctx(), runtime.TerminalOptions{ID: st.rec.ID, Cols: st.rec.Cols, Rows: st.rec.Rows,
		Cwd: a.defaultCwd(st.rec.Cwd), Env: maps.Clone(st.rec.Env), Shell: st.rec.Shell})
	if err != nil {
		return fmt.Errorf("actor: failed to start terminal: %w", a.startErr(err))
	}
	st.proc = p
	a.watch(p)
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
			return out{info: st.info()}, nil
		}
		st := &terminalState{rec: terminalRec{ID: id, Cols: s.Cols, Rows: s.Rows, Cwd: s.Cwd, Env: maps.Clone(s.Env),
			Shell: s.Shell, CreatedAt: a.now().UTC()}}
		if err := a.startTerminal(st); err != nil {
			return out{}, err
		}
		a.sb.terminalMap()[id] = st
		a.write().Put(idKey(pfxTerminal, id), mustJSON(st.rec))
		a.rec.Terminals = len(a.sb.terminals)
		a.saveRec()
		a.emit("terminal.created", map[string]any{"id": id, "process": st.proc.ID()})
		return out{info: st.info(), created: true}, nil
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
			out = append(out, st.info())
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
		return out{st.info(), st.proc}, nil
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
		if st.running() {
			if err := st.proc.Resize(cols, rows); err != nil {
				return struct{}{}, fmt.Errorf("actor: failed to resize terminal: %w", err)
			}
		}
		st.rec.Cols, st.rec.Rows = cols, rows
		a.write().Put(idKey(pfxTerminal, id), mustJSON(st.rec))
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
