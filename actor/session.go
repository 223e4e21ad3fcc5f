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

// SessionSpec is a session create request. ID "" makes a server id ("sess_" + 16 hex).
// Timeout is the default per-command timeout (0: the budget's MaxExecTimeout; always
// clamped to it).
type SessionSpec struct {
	ID      string
	Cwd     string
	Env     map[string]string
	Shell   string
	Timeout time.Duration
}

// sessionRec is a session's durable record: its spec and the cwd + exported env saved
// after every command.
type sessionRec struct {
	ID            string                   `json:"id"`
	Cwd           string                   `json:"cwd,omitempty"`
	Env           map[string]string        `json:"env,omitempty"`
	Shell         string                   `json:"shell,omitempty"`
	TimeoutMs     int64                    `json:"timeout_ms,omitempty"`
	Snapshot      *runtime.SessionSnapshot `json:"snapshot,omitempty"`
	CreatedAt     time.Time                `json:"created_at"`
	LastCommandAt *time.Time               `json:"last_command_at,omitempty"`
	Commands      int                      `json:"commands"`
	Dead          bool                     `json:"dead,omitempty"`
	DeadReason    string                   `json:"dead_reason,omitempty"`
	// SnapshotSkipped says why Snapshot is older than the last command: that
	// command's exported env was past runtime's bounds (snapshot.go).
	SnapshotSkipped string `json:"snapshot_skipped,omitempty"`
}

type sessionState struct {
	rec  sessionRec
	live *runtime.Session // nil: remembered, restarted from rec.Snapshot on next use
	// gate runs this session's commands in mailbox order (tickets taken in turns).
	gate *fifoGate
}

func (st *sessionState) snapshot() runtime.SessionSnapshot {
	if st.live != nil {
		return st.live.Snapshot()
	}
	if st.rec.Snapshot != nil {
		return *st.rec.Snapshot
	}
	return runtime.SessionSnapshot{Cwd: st.rec.Cwd, Env: maps.Clone(st.rec.Env)}
}

func (st *sessionState) info() runtime.SessionInfo {
	var in runtime.SessionInfo
	if st.live != nil {
		in = st.live.Info()
	} else {
		snap := st.snapshot()
		in = runtime.SessionInfo{ID: st.rec.ID, Status: runtime.SessionStatus("ready"), Cwd: snap.Cwd, Env: snap.Env}
	}
	// The record spans restarts; the live shell only knows its own life.
	in.CreatedAt, in.LastCommandAt, in.Commands = st.rec.CreatedAt, st.rec.LastCommandAt, st.rec.Commands
	in.SnapshotError = st.rec.SnapshotSkipped
	if st.rec.Dead {
		in.Status, in.DeadReason = runtime.SessionStatus("dead"), st.rec.DeadReason
	}
	return in
}

// sessionInfo returns st as the API shows it. A shell that died outside a command's
// completion turn (killed, or still finishing its command) is recorded dead in this
// turn, so the reply, released after the commit, is never ahead of the event log. The
// shell itself is closed by the command's completion turn, or when work ends.
func (a *sbActor) sessionInfo(st *sessionState) runtime.SessionInfo {
	in := st.info() // once: the shell may die between two looks
	if in.Status == runtime.SessionStatus("dead") && !st.rec.Dead {
		a.markDead(st, in.DeadReason)
		a.saveSession(st)
		a.dirty = true
	}
	return in
}

// markDead records st's death (session.dead), once.
func (a *sbActor) markDead(st *sessionState, reason string) {
	if st.rec.Dead {
		return
	}
	st.rec.Dead, st.rec.DeadReason = true, reason
	a.emit("session.dead", map[string]any{"id": st.rec.ID, "reason": reason})
}

func (a *sbActor) saveSession(st *sessionState) {
	a.write().Put(idKey(pfxSession, st.rec.ID), mustJSON(st.rec))
}

// liveSession returns st's shell, restarting it from its snapshot if needed.
func (a *sbActor) liveSession(st *sessionState) (*runtime.Session, error) {
	if st.live != nil {
		return st.live, nil
	}
	rt, err := a.runtime()
	if err != nil {
		return nil, err
	}
	if err := a.checkProcessBudget(rt); err != nil { // a live shell counts as a process
		return nil, err
	}
	o := runtime.SessionOptions{ID: st.rec.ID, Cwd: a.defaultCwd(st.rec.Cwd), Env: maps.Clone(st.rec.Env), Shell: st.rec.Shell}
	if st.rec.Snapshot != nil {
		snap := *st.rec.Snapshot
		o.Snapshot = &snap
		if err := runtime.CheckEnv(snap.Env); err != nil {
			o.Snapshot = nil // saved before snapshots were bounded (snapshot.go)
			a.legacySnapshot(st, err)
		}
	}
	s, err := rt.NewSession(a.ctx(), o)
	if err != nil {
		// runtime's error already says "failed to start session".
		return nil, fmt.Errorf("actor: sandbox %q: %w", a.id, err)
	}
	st.live = s
	return s, nil
}

// CreateSession starts a session. The same id alive with the same settings returns it
// with created=false; alive with different settings is ErrConflict; a dead one is
// replaced.
func (n *Node) CreateSession(ctx context.Context, sb string, s SessionSpec) (runtime.SessionInfo, bool, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.SessionInfo{}, false, err
	}
	if s.ID == "" {
		s.ID = newID("sess_")
	}
	if err := checkID("session", s.ID); err != nil {
		return runtime.SessionInfo{}, false, err
	}
	type out struct {
		info    runtime.SessionInfo
		created bool
	}
	o, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.wakeForWork(); err != nil {
			return out{}, err
		}
		if old := a.sb.sessions[s.ID]; old != nil && !old.rec.Dead {
			if !a.sameSession(old, s) {
				return out{}, fmt.Errorf("%w: session %q exists with different settings", ErrConflict, s.ID)
			}
			return out{info: a.sessionInfo(old)}, nil
		} else if old != nil && old.live != nil {
			_ = old.live.Close(a.ctx())
		} else if old == nil {
			if err := a.checkKept("max_sessions", len(a.sb.sessions), a.n.cfg.SessionLimit); err != nil {
				return out{}, err // a new id past the sessions a sandbox remembers (kept.go)
			}
		}
		st := &sessionState{rec: sessionRec{ID: s.ID, Cwd: s.Cwd, Env: maps.Clone(s.Env), Shell: s.Shell,
			TimeoutMs: s.Timeout.Milliseconds(), CreatedAt: a.now().UTC()}}
		if _, err := a.liveSession(st); err != nil {
			return out{}, err
		}
		snap := st.live.Snapshot()
		st.rec.Snapshot = &snap
		a.sb.sessionMap()[s.ID] = st
		a.saveSession(st)
		a.rec.Sessions = len(a.sb.sessions)
		a.saveRec()
		a.emit("session.created", map[string]any{"id": s.ID})
		a.dirty = true
		return out{info: a.sessionInfo(st), created: true}, nil
	})
	return o.info, o.created, err
}

// ListSessions lists the sandbox's sessions (remembered ones of a hibernated sandbox
// included, as "ready": they restart on their next command).
func (n *Node) ListSessions(ctx context.Context, sb string) ([]runtime.SessionInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	return call(ctx, n, sb, func(a *sbActor) ([]runtime.SessionInfo, error) {
		if err := a.exists(); err != nil {
			return nil, err
		}
		out := make([]runtime.SessionInfo, 0, len(a.sb.sessions))
		for _, st := range a.sb.sessions {
			out = append(out, a.sessionInfo(st))
		}
		slices.SortFunc(out, func(x, y runtime.SessionInfo) int { return x.CreatedAt.Compare(y.CreatedAt) })
		return out, nil
	})
}

// GetSession returns one session.
func (n *Node) GetSession(ctx context.Context, sb, id string) (runtime.SessionInfo, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.SessionInfo{}, err
	}
	return call(ctx, n, sb, func(a *sbActor) (runtime.SessionInfo, error) {
		if err := a.exists(); err != nil {
			return runtime.SessionInfo{}, err
		}
		st := a.sb.sessions[id]
		if st == nil {
			return runtime.SessionInfo{}, notFound("session", id)
		}
		return a.sessionInfo(st), nil
	})
}

// SessionExec runs a command in a session and returns its result. Commands of one
// session run in order; different sessions run in parallel. The command runs off the
// actor; its result is returned only after the session's new cwd and exported env are
// saved. A dead session is ErrConflict (wrapping runtime.ErrSessionDead) with the
// reason. c.Timeout defaults to the session's timeout and is clamped to the budget.
func (n *Node) SessionExec(ctx context.Context, sb, id string, c runtime.SessionCommand) (runtime.ExecResult, error) {
	if err := checkID("sandbox", sb); err != nil {
		return runtime.ExecResult{}, err
	}
	type out struct {
		a      *sbActor
		live   *runtime.Session
		gate   *fifoGate
		ticket uint64
	}
	w, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.wakeForWork(); err != nil {
			return out{}, err
		}
		st := a.sb.sessions[id]
		if st == nil {
			return out{}, notFound("session", id)
		}
		if st.rec.Dead {
			return out{}, &DeadSessionError{ID: id, Reason: st.rec.DeadReason}
		}
		live, err := a.liveSession(st)
		if err != nil {
			return out{}, err
		}
		if c.Timeout <= 0 {
			c.Timeout = time.Duration(st.rec.TimeoutMs) * time.Millisecond
		}
		c.Timeout = a.clampTimeout(c.Timeout)
		c.OutputLimit = a.outputLimit(c.OutputLimit)
		a.inflight++
		// Commands of one session run in mailbox order: each waits for the previous.
		if st.gate == nil {
			st.gate = &fifoGate{}
		}
		return out{a, live, st.gate, st.gate.ticket()}, nil
	})
	if err != nil {
		return runtime.ExecResult{}, err
	}
	if err := w.gate.wait(ctx, w.ticket); err != nil {
		w.gate.finish(w.ticket) // gave up: those behind it go on
		w.a.postSelf(func(a *sbActor) (any, error) { a.inflight--; return nil, nil })
		return runtime.ExecResult{}, err
	}
	res, execErr := w.live.Exec(ctx, c)
	w.gate.finish(w.ticket)
	// A rejected command (a bad per-call cwd or env) never reached the shell: nothing
	// to record.
	rejected := errors.Is(execErr, runtime.ErrInvalid)
	// Save the snapshot (and a death) before answering; a cancelled caller still gets
	// its completion recorded, as the system turn does not depend on ctx.
	_, err = ask(context.WithoutCancel(ctx), w.a, func(a *sbActor) (struct{}, error) {
		a.inflight--
		a.touch()
		if rejected {
			return struct{}{}, nil
		}
		st := a.sb.sessions[id]
		if st == nil || st.live != w.live {
			return struct{}{}, nil // deleted or replaced meanwhile
		}
		in := w.live.Info()
		snap := w.live.Snapshot() // within bounds: the runtime takes no other
		now := a.now().UTC()
		st.rec.Snapshot, st.rec.LastCommandAt = &snap, &now
		if res.SnapshotErr != nil {
			res.SnapshotErr = snapshotSkipped(id, res.SnapshotErr)
			a.noteSnapshot(st, res.SnapshotErr)
		} else if in.Status != runtime.SessionStatus("dead") {
			a.noteSnapshot(st, nil) // a shell that died took no snapshot of this command
		}
		if execErr == nil || !errors.Is(execErr, runtime.ErrSessionDead) {
			st.rec.Commands++
		}
		if in.Status == runtime.SessionStatus("dead") {
			a.markDead(st, in.DeadReason) // unless a turn that showed it did
			_ = w.live.Close(context.Background())
			st.live = nil
		}
		a.saveSession(st)
		a.dirty = true
		return struct{}{}, nil
	})
	if execErr != nil {
		if w.a.ended() {
			// The activation ended under the command (a fence, a move, a failed
			// commit), which closed the shell: the session itself is not dead, and
			// a retry meets it again with its saved cwd and env.
			// execErr is named, not wrapped: it says the shell closed, which is not
			// the session's state.
			return res, fmt.Errorf("%w: sandbox %q: its activation ended while the command ran; the command's outcome is unknown (%v)", ErrUnavailable, sb, execErr)
		}
		if errors.Is(execErr, runtime.ErrSessionDead) {
			return res, fmt.Errorf("%w: session %q: %w", ErrConflict, id, execErr)
		}
		// runtime's error already says "failed to exec in session".
		return res, fmt.Errorf("actor: sandbox %q: %w", sb, execErr)
	}
	if err != nil {
		return runtime.ExecResult{}, err
	}
	return res, ctx.Err()
}

// DeleteSession closes the session's shell and kills the processes started from it.
func (n *Node) DeleteSession(ctx context.Context, sb, id string) error {
	if err := checkID("sandbox", sb); err != nil {
		return err
	}
	type out struct {
		live  *runtime.Session
		procs []*runtime.Process
	}
	w, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
		if err := a.exists(); err != nil {
			return out{}, err
		}
		st := a.sb.sessions[id]
		if st == nil {
			return out{}, notFound("session", id)
		}
		var o out
		o.live = st.live
		if a.sb.rt != nil {
			for _, p := range a.sb.rt.Processes() {
				if p.Info().Session == id {
					o.procs = append(o.procs, p)
				}
			}
		}
		delete(a.sb.sessions, id)
		a.write().Delete(idKey(pfxSession, id))
		a.rec.Sessions = len(a.sb.sessions)
		a.saveRec()
		a.emit("session.deleted", map[string]any{"id": id})
		a.touch()
		return o, nil
	})
	if err != nil {
		return err
	}
	// Kill off the actor: it may take the kill grace.
	if w.live != nil {
		_ = w.live.Close(ctx)
	}
	for _, p := range w.procs {
		_ = p.Kill(ctx)
	}
	return nil
}
