package actor

import (
	"testing"

	"github.com/sandgate/sandgate/runtime"
)

// TestSetProcessLabel: a label set on a running process is in its saved running
// record (so a crash that ends it unseen lists it with the label), and one set on an exited
// process is in its saved exited record (so it outlives the runtime that ran it).
func TestSetProcessLabel(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "lb")
	done := startExited(t, n, "lb", runtime.StartOptions{Command: "exit 2", Label: "a"})
	in, err := n.SetProcessLabel(ctx, "lb", done.ID, "b")
	if err != nil || in.Label != "b" || in.Status != runtime.StatusExited {
		t.Fatalf("exited, relabelled: %+v %v", in, err)
	}
	run, err := n.StartProcess(ctx, "lb", runtime.StartOptions{Argv: []string{"sleep", "300"}, Label: "first"})
	must(t, err)
	in, err = n.SetProcessLabel(ctx, "lb", run.ID, "second")
	must(t, err)
	if in.Label != "second" || in.Status != runtime.StatusRunning {
		t.Fatalf("running, relabelled: %+v", in)
	}
	_, err = n.SetProcessLabel(ctx, "lb", "proc_nope", "x")
	wantErr(t, err, ErrNotFound)

	crashNode(t, n.Node) // the running process's exit is not seen: its running record speaks
	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	l := listed(t, n2, "lb")
	if l[run.ID].Label != "second" || l[done.ID].Label != "b" {
		t.Fatalf("after a crash: %+v", l)
	}
	// The record of a process whose runtime is gone takes a new label too.
	if in, err = n2.SetProcessLabel(ctx, "lb", done.ID, "c"); err != nil || in.Label != "c" {
		t.Fatalf("saved record, relabelled: %+v %v", in, err)
	}
	if got := listed(t, n2, "lb")[done.ID].Label; got != "c" {
		t.Fatalf("listed label %q", got)
	}
}
