package actor

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runtime"
)

// TestLegacySnapshotPastBounds: a session record saved before snapshots were bounded,
// whose env is past them, does not make the session unusable: it starts from its
// settings (its own env kept, the oversized snapshot dropped), its info says why, a
// session.snapshot_skipped event is logged, and the next command's snapshot is saved.
func TestLegacySnapshotPastBounds(t *testing.T) {
	t.Parallel()
	store, err := OpenBolt(filepath.Join(t.TempDir(), "actors.db"))
	must(t, err)
	t.Cleanup(func() { _ = store.Close() })
	n := newTestNode(t, func(c *Config) { c.Storage = store })
	mustCreate(t, n, "sb")
	_, _, err = n.CreateSession(tctx(t), "sb", SessionSpec{ID: "s", Env: map[string]string{"OWN": "1"}})
	must(t, err)
	closeNode(t, n)

	// Rewrite the record as an older server could have saved it.
	var rec sessionRec
	must(t, store.Read(tctx(t), "sb", func(r Reader) error {
		return json.Unmarshal(r.Get(idKey(pfxSession, "s")), &rec)
	}))
	big := strings.Repeat("a", runtime.MaxEnvValueBytes+1)
	rec.Snapshot.Env["BIG"] = big
	b := &Batch{Sandbox: "sb"}
	b.Put(idKey(pfxSession, "s"), mustJSON(rec))
	must(t, store.Write(tctx(t), b))

	n = reopen(t, n.cfg, n.clock)
	res, err := n.SessionExec(tctx(t), "sb", "s", runtime.SessionCommand{Command: `echo "${BIG:-none} $OWN"`})
	must(t, err)
	if string(res.Stdout) != "none 1\n" || res.SnapshotErr != nil {
		t.Fatalf("exec = %q (snapshot error %v), want %q", res.Stdout, res.SnapshotErr, "none 1\n")
	}
	if types := eventTypes(t, n, "sb"); !slices.Contains(types, "session.snapshot_skipped") {
		t.Fatalf("events %v, want a session.snapshot_skipped", types)
	}
	rec = sessionRec{} // decoding into a used one would merge its maps
	must(t, store.Read(tctx(t), "sb", func(r Reader) error {
		return json.Unmarshal(r.Get(idKey(pfxSession, "s")), &rec)
	}))
	if rec.Snapshot == nil || rec.Snapshot.Env["BIG"] != "" || rec.Snapshot.Env["OWN"] != "1" || rec.SnapshotSkipped != "" {
		t.Fatalf("saved record %+v, want a snapshot without BIG", rec)
	}
}
