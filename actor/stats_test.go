package actor

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

func TestStats(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	if st := n.Stats(); st != (Stats{}) {
		t.Fatalf("empty node: %+v", st)
	}
	mustCreate(t, n, "st1")
	if _, err := n.StartProcess(tctx(t), "st1", runtime.StartOptions{Argv: []string{"sleep", "30"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.PutTerminal(tctx(t), "st1", "t1", TerminalSpec{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "stats to count the process and terminal", func() bool {
		st := n.Stats()
		return st.ActiveSandboxes == 1 && st.Terminals == 1 && st.Processes >= 1
	})
}
