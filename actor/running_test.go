package actor

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// exitedEvents returns the data of sb's process.exited events by process id, and fails
// if one process has more than one.
func exitedEvents(tb testing.TB, n *testNode, sb string) map[string]map[string]any {
	tb.Helper()
	evs, err := n.Events(tctx(tb), sb, 0, 0)
	must(tb, err)
	out := map[string]map[string]any{}
	for _, e := range evs {
		if e.Type != "process.exited" {
			continue
		}
		var d map[string]any
		must(tb, json.Unmarshal(e.Data, &d))
		id, _ := d["id"].(string)
		if _, dup := out[id]; dup {
			tb.Fatalf("process %s has two process.exited events", id)
		}
		out[id] = d
	}
	return out
}

// runIndexed returns the sandboxes listed in n's durable run index.
func runIndexed(tb testing.TB, n *testNode) []string {
	tb.Helper()
	var ids []string
	must(tb, n.store.Read(context.Background(), nodeRecords, func(r Reader) error {
		r.Scan(pfxRunIndex, nil, func(k, _ []byte) bool { ids = append(ids, string(k[len(pfxRunIndex):])); return true })
		return nil
	}))
	return ids
}

// TestRunningRecordedAfterCrash drops a node with a process and a terminal running, as
// a crash would (nothing of its stopping reaches storage), and reopens its data dir:
// without any request for the sandbox, its event log gets, once, a process.exited for
// each, with exit_code and signal null and reason server_crashed; the records say
// exited with an unknown exit status, are kept for their keep time, and nothing is
// recorded again at the next restart.
func TestRunningRecordedAfterCrash(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "cr")
	done := startExited(t, n, "cr", runtime.StartOptions{Argv: []string{"true"}})
	bg, err := n.StartProcess(ctx, "cr", runtime.StartOptions{Argv: []string{"sleep", "300"}, Tag: "bg", Keep: time.Hour})
	must(t, err)
	term, _, err := n.PutTerminal(ctx, "cr", "t1", TerminalSpec{})
	must(t, err)
	crashNode(t, n.Node)

	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	eventually(t, 10*time.Second, "exits recorded", func() bool { return len(exitedEvents(t, n2, "cr")) == 3 })
	evs := exitedEvents(t, n2, "cr")
	for _, id := range []string{bg.ID, term.Process} {
		d := evs[id]
		if d["exit_code"] != nil || d["signal"] != nil || d["reason"] != lostReason {
			t.Fatalf("process.exited of %s = %v", id, d)
		}
	}
	if _, ok := evs[done.ID]["reason"]; ok {
		t.Fatalf("an exit seen before the crash got a reason: %v", evs[done.ID])
	}
	if got := n2.activations.Load(); got != 1 {
		t.Fatalf("%d activations at start, want 1 (the sandbox that had running records)", got)
	}
	in, err := n2.ProcessInfo(ctx, "cr", bg.ID)
	must(t, err)
	if in.Status != runtime.StatusExited || in.Exit != nil || in.ExitedAt == nil || in.Tag != "bg" || in.PID != bg.PID {
		t.Fatalf("process after the crash: %+v", in)
	}
	sb, err := n2.GetSandbox(ctx, "cr")
	must(t, err)
	if sb.Counts.Processes != 0 {
		t.Fatalf("counts.processes = %d after the crash", sb.Counts.Processes)
	}
	n2.clock.Advance(50 * time.Minute) // bg is kept an hour, the shell the default 10 min
	l := listed(t, n2, "cr")
	if _, ok := l[bg.ID]; !ok {
		t.Fatal("kept less than its keep time")
	}
	if _, ok := l[term.Process]; ok {
		t.Fatal("the shell was kept past the default keep time")
	}
	closeNode(t, n2)

	n3 := reopen(t, &cfg, n.clock)
	if got := n3.activations.Load(); got != 0 {
		t.Fatalf("%d activations after a clean stop, want 0", got)
	}
	if ids := runIndexed(t, n3); len(ids) != 0 {
		t.Fatalf("run index after a clean stop: %v", ids)
	}
	if evs := exitedEvents(t, n3, "cr"); len(evs) != 3 {
		t.Fatalf("process.exited events after another restart: %v", evs)
	}
}

// TestRunIndexOnlyRunning checks the run index lists a sandbox from its first process
// start until its processes' exits are recorded and the node stops, and that only
// indexed sandboxes are activated after a crash.
func TestRunIndexOnlyRunning(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "idle")
	mustCreate(t, n, "quiet")
	mustCreate(t, n, "busy")
	p, err := n.StartProcess(ctx, "busy", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	startExited(t, n, "quiet", runtime.StartOptions{Argv: []string{"true"}})
	if ids := runIndexed(t, n); len(ids) != 2 || ids[0] != "busy" || ids[1] != "quiet" {
		t.Fatalf("run index %v, want [busy quiet]", ids)
	}
	// quiet's entry is stale: dropped with the index's next write.
	mustCreate(t, n, "next")
	_, err = n.StartProcess(ctx, "next", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	if ids := runIndexed(t, n); len(ids) != 2 || ids[0] != "busy" || ids[1] != "next" {
		t.Fatalf("run index %v, want [busy next]", ids)
	}
	crashNode(t, n.Node)

	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	if got := n2.activations.Load(); got != 2 {
		t.Fatalf("%d activations at start, want 2", got)
	}
	eventually(t, 10*time.Second, "exit recorded", func() bool { return exitRecorded(t, n2, "busy", p.ID) })
	for _, sb := range []string{"idle", "quiet"} {
		if n2.active(sb) != nil {
			t.Fatalf("%s was activated at start", sb)
		}
	}
}

// TestRunningDeleted checks a process deleted while running leaves no running record
// behind: nothing is recorded for it after a crash.
func TestRunningDeleted(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "rd")
	p, err := n.StartProcess(ctx, "rd", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	must(t, n.DeleteProcess(ctx, "rd", p.ID))
	if k := savedKeys(t, n, "rd"); k != 0 {
		t.Fatalf("%d saved records after delete", k)
	}
	before := len(exitedEvents(t, n, "rd"))
	crashNode(t, n.Node)
	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	if l := listed(t, n2, "rd"); len(l) != 0 {
		t.Fatalf("deleted process listed after the crash: %+v", l)
	}
	if got := len(exitedEvents(t, n2, "rd")); got != before {
		t.Fatalf("%d process.exited events after the crash, %d before", got, before)
	}
}

// TestRunIndexFailedStart: a process that fails to start leaves no index entry behind
// (it is dropped with the index's next write).
func TestRunIndexFailedStart(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "fs")
	mustCreate(t, n, "ok")
	if _, err := n.StartProcess(ctx, "fs", runtime.StartOptions{Argv: []string{"/nonexistent/sandgate-test"}}); err == nil {
		t.Fatal("a missing program started")
	}
	_, err := n.StartProcess(ctx, "ok", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	if ids := runIndexed(t, n); len(ids) != 1 || ids[0] != "ok" {
		t.Fatalf("run index %v, want [ok]", ids)
	}
}

// TestRunIndexHammer runs adds, releases and flushes of the run index at once, as many
// actors and a closing node would: while an actor holds its entry (between add and
// release) the entry is durable, whatever the others' writes delete.
func TestRunIndexHammer(t *testing.T) {
	t.Parallel()
	st := openTestBolt(t)
	var x runIndex
	if _, err := x.load(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	listed := func(id string) bool {
		var ok bool
		must(t, st.Read(context.Background(), nodeRecords, func(r Reader) error {
			ok = r.Get(idKey(pfxRunIndex, id)) != nil
			return nil
		}))
		return ok
	}
	const actors, rounds = 8, 50
	errs := make(chan error, actors+1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := x.flush(st); err != nil {
				errs <- err
				return
			}
			goruntime.Gosched()
		}
	}()
	for g := range actors {
		go func() {
			for i := range rounds {
				id := fmt.Sprintf("sb%d-%d", g, i%3)
				if err := x.add(st, id); err != nil {
					errs <- err
					return
				}
				if !listed(id) {
					errs <- fmt.Errorf("%s not durable while held", id)
					return
				}
				x.release(id)
			}
			errs <- nil
		}()
	}
	for range actors {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Error(err)
	}
	must(t, x.flush(st))
	if ids, err := x.load(context.Background(), st); err != nil || len(ids) != 0 {
		t.Fatalf("entries left after every release and a flush: %v %v", ids, err)
	}
}

// TestRunIndexSequence checks the run index's durable entries after sequences of adds,
// releases and flushes.
func TestRunIndexSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ops  []string // "add X", "release X", "flush"
		want []string // durable entries at the end
	}{
		{name: "held", ops: []string{"add a"}, want: []string{"a"}},
		{name: "released then flushed", ops: []string{"add a", "release a", "flush"}, want: nil},
		{name: "released, kept until a write", ops: []string{"add a", "release a"}, want: []string{"a"}},
		{name: "dropped by another's add", ops: []string{"add a", "release a", "add b"}, want: []string{"b"}},
		{name: "taken again before the flush", ops: []string{"add a", "release a", "add a", "flush"}, want: []string{"a"}},
		{name: "taken again before another's add", ops: []string{"add a", "release a", "add a", "add b"}, want: []string{"a", "b"}},
		{name: "release of an unlisted one", ops: []string{"release a", "flush"}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := openTestBolt(t)
			var x runIndex
			for _, op := range tc.ops {
				verb, id, _ := strings.Cut(op, " ")
				switch verb {
				case "add":
					must(t, x.add(st, id))
				case "release":
					x.release(id)
				case "flush":
					must(t, x.flush(st))
				}
			}
			var y runIndex // what a restart reads
			got, err := y.load(context.Background(), st)
			must(t, err)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunningRecordedAfterDroppedActivation: an activation dropped by an internal error
// ends its processes without recording them; the next activation records them.
func TestRunningRecordedAfterDroppedActivation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "dr")
	p, err := n.StartProcess(ctx, "dr", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	_, err = call(ctx, n.Node, "dr", func(a *sbActor) (int, error) { panic("test: drop the activation") })
	wantErr(t, err, ErrUnavailable)
	eventually(t, 10*time.Second, "exit recorded", func() bool {
		_, err := n.GetSandbox(ctx, "dr") // activates again
		return err == nil && exitRecorded(t, n, "dr", p.ID)
	})
	if d := exitedEvents(t, n, "dr")[p.ID]; d["reason"] != lostReason {
		t.Fatalf("process.exited %v", d)
	}
}

// TestCrashRecordedBeforeAlarms: a sandbox whose idle TTL passed while its node was
// down after a crash gets, at the next start, the process.exited of what the crash
// ended before its sandbox.hibernated: the log never shows a hibernated sandbox with a
// process still running.
func TestCrashRecordedBeforeAlarms(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Defaults = Budget{IdleTTL: time.Minute} })
	ctx := tctx(t)
	mustCreate(t, n, "ca")
	_, err := n.StartProcess(ctx, "ca", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	crashNode(t, n.Node)
	n.clock.Advance(2 * time.Minute)

	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	var types []string
	eventually(t, 10*time.Second, "the exit and the hibernation recorded", func() bool {
		n2.clock.Advance(time.Second) // a timer of the fake clock fires when it moves
		evs, err := n2.Events(ctx, "ca", 0, 0)
		must(t, err)
		types = types[:0]
		for _, e := range evs {
			if e.Type == "process.exited" || e.Type == "sandbox.hibernated" {
				types = append(types, e.Type)
			}
		}
		return len(types) == 2
	})
	if types[0] != "process.exited" {
		t.Fatalf("events %v: the sandbox hibernated before the crash's exit was recorded", types)
	}
}
