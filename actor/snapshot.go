package actor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/runtime"
)

// A session's snapshot (cwd and exported env) is saved after every command so the
// session comes back after hibernation, a restart or a move, and it is replicated with
// the sandbox's other records. The runtime takes a snapshot only while the env is
// within runtime.MaxEnvVars, MaxEnvValueBytes and MaxEnvBytes (what execve would pass
// to a program anyway); past them:
//
//   - the command itself is not refused: it ran, and its output and exit code are the
//     reply, whose SnapshotErr (wrapping runtime.ErrEnvTooLarge) says the snapshot was
//     not saved and which bound it passed;
//   - the record keeps the snapshot of the last command within the bounds, so a
//     rehydrated session comes back as it was then, and the session shows the reason
//     (SessionInfo.SnapshotError) until a command's snapshot is saved again;
//   - the event log gets a session.snapshot_skipped event when a session's snapshots
//     stop being saved (once, not for every command while they are not).

// legacySnapshot handles a record saved before snapshots were bounded, whose env is
// past them: the shell could not start from it (the runtime refuses such a start), so
// the session starts from its settings instead, with a session.snapshot_skipped event.
// The command that started it saves a bounded snapshot.
func (a *sbActor) legacySnapshot(st *sessionState, err error) {
	a.n.cfg.Logger.Warn("session snapshot past the env bounds: the session starts from its settings",
		"sandbox", a.id, "session", st.rec.ID, "err", err)
	a.noteSnapshot(st, fmt.Errorf("its saved snapshot was dropped: %w", err))
	st.rec.Snapshot = nil
	a.saveSession(st)
}

// snapshotSkipped wraps a command's runtime.EnvLimitError as the reply states it.
func snapshotSkipped(session string, err error) error {
	return fmt.Errorf("actor: session %q: its cwd and env after this command were not saved, so a restart or move brings it back as after its last command within the limits: %w", session, err)
}

// noteSnapshot records in st whether the last command's snapshot was saved (err nil)
// or why not, with a session.snapshot_skipped event when saving stops.
func (a *sbActor) noteSnapshot(st *sessionState, err error) {
	if err == nil {
		st.rec.SnapshotSkipped = ""
		return
	}
	why, limit := err.Error(), ""
	var le *runtime.EnvLimitError
	if errors.As(err, &le) {
		why, limit = strings.TrimPrefix(le.Error(), "runtime: "), le.Limit
	}
	if st.rec.SnapshotSkipped == "" {
		a.emit("session.snapshot_skipped", map[string]any{"id": st.rec.ID, "limit": limit, "reason": why})
	}
	st.rec.SnapshotSkipped = why
}
