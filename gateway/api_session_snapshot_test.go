package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestSessionSnapshotBound: a session command that exports more than the snapshot
// bounds (here 8 MB in one variable) still answers 200 with its output and exit code,
// and with snapshot_error {code too_large} naming the bound; the session object shows
// it, the event log has one session.snapshot_skipped, and after a restart of the
// server the session comes back with the cwd and env of its last command within the
// bounds. A later command within them saves its snapshot again and clears the error.
func TestSessionSnapshotBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts, stop := startServerOn(t, dir)
	ts.sandbox("snap")
	const sess = "/v1/sandboxes/snap/sessions/big"
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/snap/sessions", map[string]any{"id": "big"})
	exec := func(ts *testServer, cmd string) sessionExecJSON {
		t.Helper()
		var res sessionExecJSON
		ts.must(http.StatusOK, "POST", sess+"/exec", map[string]any{"command": cmd}).json(t, &res)
		return res
	}
	if res := exec(ts, "mkdir d && export KEPT=1"); res.SnapshotError != nil {
		t.Fatalf("snapshot_error on a small env: %+v", res.SnapshotError)
	}
	var before sessionJSON
	ts.must(http.StatusOK, "GET", sess, nil).json(t, &before)

	// The second command runs while the env is past the bound already (builtins only:
	// no program can be started with such an environment, as execve refuses it).
	for _, cmd := range []string{`BIG=$(head -c 8000000 /dev/zero | tr '\0' a); export BIG; cd d; echo ran; (exit 5)`, "echo ran; (exit 5)"} {
		res := exec(ts, cmd)
		if res.ExitCode != 5 || res.Stdout != "ran\n" {
			t.Fatalf("command past the bound: exit %d stdout %q, want 5 and %q", res.ExitCode, res.Stdout, "ran\n")
		}
		if e := res.SnapshotError; e == nil || e.Code != codeTooLarge || !strings.Contains(e.Message, "env_bytes") {
			t.Fatalf("snapshot_error = %+v, want too_large naming env_bytes", e)
		}
	}
	var s sessionJSON
	ts.must(http.StatusOK, "GET", sess, nil).json(t, &s)
	if s.SnapshotError == nil || s.SnapshotError.Code != codeTooLarge || s.Cwd != before.Cwd || s.Env["KEPT"] != "1" || s.Env["BIG"] != "" {
		t.Fatalf("session object past the bound: %+v (cwd before %q)", s, before.Cwd)
	}
	var list struct{ Events []eventJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/snap/events", nil).json(t, &list)
	skipped := 0
	for _, e := range list.Events {
		if e.Type == "session.snapshot_skipped" {
			skipped++
			d, _ := e.Data.(map[string]any)
			if d["id"] != "big" || d["limit"] != "env_bytes" || !strings.Contains(d["reason"].(string), "env_bytes") {
				t.Errorf("event data %v", e.Data)
			}
		}
	}
	if skipped != 1 {
		t.Fatalf("%d session.snapshot_skipped events, want 1: %+v", skipped, list.Events)
	}

	stop()
	ts, _ = startServerOn(t, dir)
	res := exec(ts, `pwd; echo "${BIG:-none} $KEPT"`)
	if want := before.Cwd + "\nnone 1\n"; res.Stdout != want || res.SnapshotError != nil {
		t.Fatalf("after a restart: %q (snapshot_error %+v), want %q", res.Stdout, res.SnapshotError, want)
	}
	s = sessionJSON{} // absent fields leave a decoded value as it was
	ts.must(http.StatusOK, "GET", sess, nil).json(t, &s)
	if s.SnapshotError != nil {
		t.Fatalf("snapshot_error after a command within the bounds: %+v", s.SnapshotError)
	}
	if res := exec(ts, "cd d"); res.SnapshotError != nil {
		t.Fatalf("snapshot_error on cd: %+v", res.SnapshotError)
	}
	ts.must(http.StatusOK, "GET", sess, nil).json(t, &s)
	if !strings.HasSuffix(s.Cwd, "/d") {
		t.Fatalf("cwd %q after cd d, want .../d", s.Cwd)
	}
}
