package runtime

import (
	"errors"
	"testing"
	"time"
)

// TestCloseStdinAtExit closes the stdin of processes that have just exited: between
// the exit being seen (the pipe closed by the watcher) and published, CloseStdin
// must say ErrExited, as it does once the exit is published, never that the pipe was
// already closed.
func TestCloseStdinAtExit(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	for i := range 30 {
		ctx := testCtx(t)
		p, err := s.Start(ctx, StartOptions{Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !p.exitedOrGone() { // reaped: the watcher closed stdin; maybe not yet published
			if time.Now().After(deadline) {
				t.Fatalf("process %d not reaped within 30 s", i)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if err := p.CloseStdin(); !errors.Is(err, ErrExited) {
			t.Fatalf("process %d: CloseStdin after its exit = %v, want ErrExited", i, err)
		}
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
