package runtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An interactive shell ignores SIGTERM; killing a terminal must not wait out the grace
// period, because a PTY process is hung up first.
func TestKillTerminalHangsUp(t *testing.T) {
	t.Parallel()
	const grace = 30 * time.Second
	s := newTestSandbox(t, &Config{KillGrace: grace})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	p, err := s.StartTerminal(ctx, TerminalOptions{ID: "t", Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the prompt, so the shell has set up its signal handling.
	sub := p.Subscribe(0)
	defer sub.Close()
	var out strings.Builder
	for !strings.ContainsAny(out.String(), "$#") {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no prompt (output %q): %v", out.String(), err)
		}
		out.Write(ev.Data)
	}
	start := time.Now()
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > grace/2 {
		t.Fatalf("kill took %v: the shell waited for SIGKILL", took)
	}
	if st, _ := p.Wait(ctx); st.Signal != "SIGHUP" {
		t.Fatalf("exit %+v, want ended by SIGHUP", st)
	}
}
