package runtime

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestCloseLeavesNothing runs every kind of work on one sandbox, closes it, and checks
// that no goroutine, fd or child process of ours is left (not parallel: leakcheck.Check
// looks at the whole process).
func TestCloseLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	s, err := New(&Config{Dir: t.TempDir(), KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := s.Exec(ctx, ExecOptions{Command: "sleep 30 & echo hi", Stdin: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(ctx, StartOptions{Command: "trap '' TERM; sleep 30 & cat", PTY: &WinSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	if _, err := s.Start(ctx, StartOptions{Command: "sleep 30 & cat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTerminal(ctx, TerminalOptions{ID: "leak"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx, StartOptions{Argv: []string{"true"}, Keep: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	collect(t, ctx, sub)
}
