package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testWait bounds every wait in session tests; generous for loaded machines.
const testWait = 60 * time.Second

// testSessionConfig returns a config for a session in a fresh workspace.
func testSessionConfig(tb testing.TB) sessionConfig {
	tb.Helper()
	dir := tb.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return sessionConfig{
		Dir: dir,
		Env: map[string]string{
			"PATH": os.Getenv("PATH"),
			"HOME": dir,
			"LANG": "C.UTF-8",
		},
	}
}

// newTestSession starts a session and closes it when the test ends.
func newTestSession(tb testing.TB, cfg sessionConfig) *Session {
	tb.Helper()
	s, err := newSession(testCtx(tb), cfg)
	if err != nil {
		tb.Fatalf("newSession: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// mustExec runs a command that must not fail to run.
func mustExec(tb testing.TB, s *Session, c SessionCommand) ExecResult {
	tb.Helper()
	r, err := s.Exec(testCtx(tb), c)
	if err != nil {
		tb.Fatalf("Exec(%q): %v", c.Command, err)
	}
	return r
}

// run is mustExec for a bare command.
func run(tb testing.TB, s *Session, command string) ExecResult {
	tb.Helper()
	return mustExec(tb, s, SessionCommand{Command: command})
}
