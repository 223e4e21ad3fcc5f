package actor

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// startExited starts command in sb and waits until its exit is recorded.
func startExited(tb testing.TB, n *testNode, sb string, o runtime.StartOptions) runtime.ProcessInfo {
	tb.Helper()
	ctx := tctx(tb)
	in, err := n.StartProcess(ctx, sb, o)
	must(tb, err)
	p, err := n.Process(ctx, sb, in.ID)
	must(tb, err)
	_, err = p.Wait(ctx)
	must(tb, err)
	eventually(tb, 10*time.Second, "exit recorded", func() bool {
		in, err := n.GetSandbox(ctx, sb)
		return err == nil && in.Counts.Processes == 0 && exitRecorded(tb, n, sb, p.ID())
	})
	return p.Info()
}

// exitRecorded reports whether sb's event log has process.exited for id.
func exitRecorded(tb testing.TB, n *testNode, sb, id string) bool {
	tb.Helper()
	return eventLogged(tb, n, sb, "process.exited", id)
}

// listed returns sb's processes by id.
func listed(tb testing.TB, n *testNode, sb string) map[string]runtime.ProcessInfo {
	tb.Helper()
	list, err := n.ListProcesses(tctx(tb), sb)
	must(tb, err)
	out := map[string]runtime.ProcessInfo{}
	for _, in := range list {
		out[in.ID] = in
	}
	return out
}

// savedKeys counts sb's saved exited-process records in storage.
func savedKeys(tb testing.TB, n *testNode, sb string) int {
	tb.Helper()
	count := 0
	must(tb, n.store.Read(context.Background(), sb, func(r Reader) error {
		r.Scan(pfxExited, nil, func(_, _ []byte) bool { count++; return true })
		return nil
	}))
	return count
}

// wantExitedRecord checks that Process answers id with an *ExitedError holding the
// record, which matches runtime.ErrExited, and returns the record.
func wantExitedRecord(tb testing.TB, n *testNode, sb, id string) runtime.ProcessInfo {
	tb.Helper()
	_, err := n.Process(tctx(tb), sb, id)
	in, ok := ExitedProcess(err)
	if !ok || !errors.Is(err, runtime.ErrExited) || in.ID != id {
		tb.Fatalf("Process(%s) = %v, want an *ExitedError for it", id, err)
	}
	got, err := n.ProcessInfo(tctx(tb), sb, id)
	must(tb, err)
	if got.ID != id || got.Status != runtime.StatusExited {
		tb.Fatalf("ProcessInfo = %+v", got)
	}
	return in
}

// TestExitedKeptAfterPassivation lets a process exit, passivates the sandbox and
// checks its record is still listed with the process object's fields until its keep
// time passes, then pruned from storage too.
func TestExitedKeptAfterPassivation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "kp")
	want := startExited(t, n, "kp", runtime.StartOptions{Command: "printf hello; exit 3", Tag: "job", Label: "Job",
		Keep: time.Hour})
	passivateAll(t, n)
	if savedKeys(t, n, "kp") != 1 {
		t.Fatal("no saved record")
	}
	got, ok := listed(t, n, "kp")[want.ID]
	if !ok {
		t.Fatalf("exited process not listed after passivation")
	}
	if got.Status != runtime.StatusExited || got.Exit == nil || *got.Exit != (runtime.ExitStatus{Code: 3}) ||
		got.Command != want.Command || got.Tag != "job" || got.Label != "Job" || got.PID != want.PID ||
		got.Cwd != want.Cwd || !got.CreatedAt.Equal(want.CreatedAt) || got.ExitedAt == nil ||
		!got.ExitedAt.Equal(*want.ExitedAt) || got.OutputOffset != 5 || got.OutputDropped != 5 {
		t.Fatalf("listed %+v, want as %+v with all output dropped", got, want)
	}
	wantExitedRecord(t, n, "kp", want.ID)

	n.clock.Advance(50 * time.Minute)
	if _, ok := listed(t, n, "kp")[want.ID]; !ok {
		t.Fatal("dropped before its keep time")
	}
	n.clock.Advance(11 * time.Minute)
	if l := listed(t, n, "kp"); len(l) != 0 {
		t.Fatalf("listed after its keep time: %+v", l)
	}
	_, err := n.Process(tctx(t), "kp", want.ID)
	wantErr(t, err, ErrNotFound)
	passivateAll(t, n)
	if k := savedKeys(t, n, "kp"); k != 0 {
		t.Fatalf("%d saved records left after the keep time", k)
	}
}

// TestExitedKeptAfterHibernation ends a running process by hibernation: both it and a
// process that exited before are listed while the sandbox sleeps, each for its own
// keep time (the default for the one ended by hibernation).
func TestExitedKeptAfterHibernation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: 24 * time.Hour}
		c.PassivateAfter = 24 * time.Hour
	})
	ctx := tctx(t)
	mustCreate(t, n, "kh")
	quick := startExited(t, n, "kh", runtime.StartOptions{Argv: []string{"true"}, Keep: time.Hour})
	bg, err := n.StartProcess(ctx, "kh", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	n.clock.Advance(11 * time.Minute)
	eventually(t, 10*time.Second, "hibernated", func() bool {
		in, err := n.GetSandbox(ctx, "kh")
		return err == nil && in.State == StateHibernated
	})
	l := listed(t, n, "kh")
	if q, ok := l[quick.ID]; !ok || q.Exit == nil || q.Exit.Code != 0 || !slices.Equal(q.Argv, []string{"true"}) {
		t.Fatalf("quick process after hibernation: %+v", l)
	}
	b, ok := l[bg.ID]
	if !ok || b.Status != runtime.StatusExited || b.Exit == nil || b.Exit.Signal == "" || b.ExitedAt == nil {
		t.Fatalf("process ended by hibernation: %+v", l)
	}
	if in, _ := n.GetSandbox(ctx, "kh"); in.State != StateHibernated {
		t.Fatalf("listing woke the sandbox: %s", in.State)
	}
	n.clock.Advance(runtime.DefaultKeep - time.Minute)
	if _, ok := listed(t, n, "kh")[bg.ID]; !ok {
		t.Fatal("dropped before the default keep time")
	}
	n.clock.Advance(2 * time.Minute)
	l = listed(t, n, "kh")
	if _, ok := l[bg.ID]; ok {
		t.Fatal("listed after the default keep time")
	}
	if _, ok := l[quick.ID]; !ok {
		t.Fatal("the one kept an hour was dropped")
	}
}

// TestExitedKeptAfterExpiry ends a running process by max duration.
func TestExitedKeptAfterExpiry(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Limits = Budget{MaxDuration: time.Hour, IdleTTL: 2 * time.Hour} })
	ctx := tctx(t)
	mustCreate(t, n, "ke")
	p, err := n.StartProcess(ctx, "ke", runtime.StartOptions{Command: "sleep 300", Tag: "t"})
	must(t, err)
	n.clock.Advance(61 * time.Minute)
	eventually(t, 10*time.Second, "expired", func() bool {
		in, err := n.GetSandbox(ctx, "ke")
		return err == nil && in.State == StateExpired
	})
	passivateAll(t, n)
	got, ok := listed(t, n, "ke")[p.ID]
	if !ok || got.Status != runtime.StatusExited || got.Tag != "t" {
		t.Fatalf("process ended by expiry: %+v", got)
	}
	wantExitedRecord(t, n, "ke", p.ID)
}

// TestExitedKeptAcrossRestart closes the node with one process running and one exited,
// reopens the data dir, and deletes one record: the deletion survives another restart.
func TestExitedKeptAcrossRestart(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "kr")
	done := startExited(t, n, "kr", runtime.StartOptions{Command: "echo out; echo err >&2; exit 4"})
	run, err := n.StartProcess(ctx, "kr", runtime.StartOptions{Argv: []string{"sleep", "300"}, PTY: &runtime.WinSize{Cols: 100, Rows: 30}})
	must(t, err)
	closeNode(t, n)

	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	l := listed(t, n2, "kr")
	if d, ok := l[done.ID]; !ok || d.Exit == nil || d.Exit.Code != 4 || d.OutputOffset != 8 {
		t.Fatalf("exited before the restart: %+v", l)
	}
	r, ok := l[run.ID]
	if !ok || r.Status != runtime.StatusExited || !r.PTY || r.Cols != 100 || r.Rows != 30 || r.Exit == nil {
		t.Fatalf("ended by the restart: %+v", l)
	}
	list, err := n2.ListProcesses(ctx, "kr")
	must(t, err)
	if len(list) != 2 || list[0].ID != done.ID { // oldest first
		t.Fatalf("order %+v", list)
	}
	wantExitedRecord(t, n2, "kr", run.ID)
	must(t, n2.DeleteProcess(ctx, "kr", run.ID))
	wantErr(t, n2.DeleteProcess(ctx, "kr", run.ID), ErrNotFound)
	if got := eventTypes(t, n2, "kr"); got[len(got)-1] != "process.deleted" {
		t.Fatalf("events %v", got)
	}
	closeNode(t, n2)

	n3 := reopen(t, &cfg, n.clock)
	l = listed(t, n3, "kr")
	if _, ok := l[run.ID]; ok || len(l) != 1 {
		t.Fatalf("after delete and restart: %+v", l)
	}
}

// TestDeleteExitedRemovesSaved deletes a process whose exit was saved while its runtime
// still keeps it: the saved record goes too, so it is not listed after passivation.
func TestDeleteExitedRemovesSaved(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "kd")
	in := startExited(t, n, "kd", runtime.StartOptions{Argv: []string{"true"}})
	must(t, n.DeleteProcess(tctx(t), "kd", in.ID))
	passivateAll(t, n)
	if l := listed(t, n, "kd"); len(l) != 0 {
		t.Fatalf("deleted record listed: %+v", l)
	}
	if k := savedKeys(t, n, "kd"); k != 0 {
		t.Fatalf("%d saved records after delete", k)
	}
}

// TestExitedBounded: a sandbox keeps at most Config.ExitedLimit exited records, the
// newest, in storage and in the runtime alike; the dropped ones are counted, a running
// process is never dropped for them, and records loaded under a larger limit are
// trimmed to the new one.
func TestExitedBounded(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.ExitedLimit = 3 })
	ctx := tctx(t)
	mustCreate(t, n, "kb")
	var ids []string
	for range 4 {
		ids = append(ids, startExited(t, n, "kb", runtime.StartOptions{Argv: []string{"true"}}).ID)
	}
	run, err := n.StartProcess(ctx, "kb", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	last, err := n.StartProcess(ctx, "kb", runtime.StartOptions{Argv: []string{"true"}})
	must(t, err)
	ids = append(ids, last.ID)
	eventually(t, 10*time.Second, "exit recorded", func() bool { return exitRecorded(t, n, "kb", last.ID) })
	check := func(when string, want ...string) {
		t.Helper()
		l := listed(t, n, "kb")
		if len(l) != len(want) {
			t.Fatalf("%s: %d listed, want %d (%v): %+v", when, len(l), len(want), want, l)
		}
		for _, id := range want {
			if _, ok := l[id]; !ok {
				t.Fatalf("%s: %s not listed: %+v", when, id, l)
			}
		}
	}
	check("while active", run.ID, ids[2], ids[3], ids[4])
	held, err := call(ctx, n.Node, "kb", func(a *sbActor) (int, error) { return len(a.sb.rt.Processes()), nil })
	must(t, err)
	if held != 4 {
		t.Fatalf("the runtime holds %d process records, want the running one and 3 exited", held)
	}
	if st := n.Stats(); st.ExitedDropped != 2 {
		t.Fatalf("Stats.ExitedDropped = %d, want 2", st.ExitedDropped)
	}
	// Its exit makes 4 exited records: the oldest of them goes.
	p, err := n.Process(ctx, "kb", run.ID)
	must(t, err)
	must(t, p.Signal(syscall.SIGTERM))
	eventually(t, 10*time.Second, "exit recorded", func() bool { return exitRecorded(t, n, "kb", run.ID) })
	passivateAll(t, n)
	check("after passivation", ids[3], ids[4], run.ID)
	if k := savedKeys(t, n, "kb"); k != 3 {
		t.Fatalf("%d saved records, want 3", k)
	}

	closeNode(t, n)
	cfg := *n.cfg
	cfg.ExitedLimit = 1
	n2 := reopen(t, &cfg, n.clock)
	n = n2
	check("after a restart with a smaller limit", run.ID)
	passivateAll(t, n2)
	if k := savedKeys(t, n2, "kb"); k != 1 {
		t.Fatalf("%d saved records after the restart, want 1", k)
	}
}
