package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sessTestWait bounds every wait in session tests; generous for loaded machines.
const sessTestWait = 60 * time.Second

func sessTestCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessTestWait)
	tb.Cleanup(cancel)
	return ctx
}

// sessTestConfig returns a config for a session in a fresh workspace.
func sessTestConfig(tb testing.TB) sessionConfig {
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

// sessNewTest starts a session and closes it when the test ends.
func sessNewTest(tb testing.TB, cfg sessionConfig) *Session {
	tb.Helper()
	s, err := newSession(sessTestCtx(tb), cfg)
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

// sessMustExec runs a command that must not fail to run.
func sessMustExec(tb testing.TB, s *Session, c SessionCommand) ExecResult {
	tb.Helper()
	r, err := s.Exec(sessTestCtx(tb), c)
	if err != nil {
		tb.Fatalf("Exec(%q): %v", c.Command, err)
	}
	return r
}

// sessRun is mustExec for a bare command.
func sessRun(tb testing.TB, s *Session, command string) ExecResult {
	tb.Helper()
	return sessMustExec(tb, s, SessionCommand{Command: command})
}
