package actor

import (
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestBusy follows Busy through what keeps a sandbox from passivating: a running
// process, an attached client, and neither.
func TestBusy(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "bz")
	mustCreate(t, n, "idle")
	if n.Busy("bz") || n.Busy("nothing") {
		t.Fatal("busy with nothing running")
	}
	p, err := n.StartProcess(ctx, "bz", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	if !n.Busy("bz") {
		t.Fatal("not busy with a process running")
	}
	if got := n.BusySandboxes(); !slices.Equal(got, []string{"bz"}) {
		t.Fatalf("BusySandboxes = %v", got)
	}
	must(t, n.DeleteProcess(ctx, "bz", p.ID))
	eventually(t, 30*time.Second, "not busy once the process ended", func() bool { return !n.Busy("bz") })

	release, err := n.Attach(ctx, "idle")
	must(t, err)
	if !n.Busy("idle") {
		t.Fatal("not busy with a client attached")
	}
	release()
	eventually(t, 10*time.Second, "not busy once the client left", func() bool { return !n.Busy("idle") })
	passivateAll(t, n)
	if n.Busy("bz") || len(n.BusySandboxes()) != 0 {
		t.Fatal("busy after passivation")
	}
}
