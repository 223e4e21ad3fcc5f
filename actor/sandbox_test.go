package actor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

func isZombie(pid int) bool {
	b, err := readFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

func TestExecAndBudgets(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{MaxProcesses: 2, MaxExecTimeout: 300 * time.Millisecond, OutputBufferBytes: 1000}
	})
	ctx := tctx(t)
	_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "ex", Env: map[string]string{"SB": "yes"}})
	must(t, err)
	tests := []struct {
		name      string
		o         runtime.ExecOptions
		code      int
		stdout    string
		timedOut  bool
		truncated bool
	}{
		{name: "env", o: runtime.ExecOptions{Command: "echo $SB $X", Env: map[string]string{"X": "1"}}, stdout: "yes 1\n"},
		{name: "exit code", o: runtime.ExecOptions{Command: "exit 3"}, code: 3},
		{name: "timeout clamped", o: runtime.ExecOptions{Command: "sleep 5", Timeout: time.Hour}, code: 124, timedOut: true},
		{name: "output clamped", o: runtime.ExecOptions{Command: "head -c 5000 /dev/zero", OutputLimit: 1 << 20}, truncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := tctx(t) // the subtest's own: it may wait for a parallel slot longer than the parent's lives
			res, err := n.Exec(ctx, "ex", tc.o)
			must(t, err)
			if tc.timedOut {
				// The clamp is what this checks: killed at ~300ms, not after 5s.
				if res.Duration > 3*time.Second || !res.TimedOut || res.ExitCode != 124 {
					t.Fatalf("res = %+v", res)
				}
				return
			}
			if res.ExitCode != tc.code || res.TimedOut != tc.timedOut || res.Truncated != tc.truncated ||
				(tc.stdout != "" && string(res.Stdout) != tc.stdout) {
				t.Fatalf("res = %+v stdout %q", res, res.Stdout)
			}
			if tc.truncated && len(res.Stdout) > 1000 {
				t.Fatalf("stdout %d bytes over the 1000 budget", len(res.Stdout))
			}
		})
	}
	t.Run("max processes", func(t *testing.T) {
		t.Parallel()
		ctx := tctx(t)         // the subtest's own: it may wait for a parallel slot longer than the parent's lives
		mustCreate(t, n, "mp") // its own sandbox: the execs above count in ex's budget
		for range 2 {
			_, err := n.StartProcess(ctx, "mp", runtime.StartOptions{Command: "sleep 30"})
			must(t, err)
		}
		_, err := n.StartProcess(ctx, "mp", runtime.StartOptions{Command: "sleep 30"})
		wantErr(t, err, ErrBudgetExceeded)
		_, _, err = n.PutTerminal(ctx, "mp", "t1", TerminalSpec{})
		wantErr(t, err, ErrBudgetExceeded)
		if got := eventTypes(t, n, "mp"); !slices.Contains(got, "budget.denied") {
			t.Fatalf("no budget.denied in %v", got)
		}
	})
}

func TestProcessLifecycle(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "pl")
	in, err := n.StartProcess(ctx, "pl", runtime.StartOptions{Command: "echo hi; exit 7", Tag: "x"})
	must(t, err)
	p, err := n.Process(ctx, "pl", in.ID)
	must(t, err)
	st, err := p.Wait(ctx)
	must(t, err)
	if st.Code != 7 {
		t.Fatalf("exit = %+v", st)
	}
	eventually(t, 10*time.Second, "process.exited", func() bool { return slices.Contains(eventTypes(t, n, "pl"), "process.exited") })
	list, err := n.ListProcesses(ctx, "pl")
	must(t, err)
	if len(list) != 1 || list[0].Status != runtime.StatusExited {
		t.Fatalf("list = %+v", list)
	}
	long, err := n.StartProcess(ctx, "pl", runtime.StartOptions{Command: "sleep 60"})
	must(t, err)
	must(t, n.DeleteProcess(ctx, "pl", long.ID))
	if alive(long.PID) {
		t.Fatal("deleted process still alive")
	}
	_, err = n.Process(ctx, "pl", long.ID)
	wantErr(t, err, ErrNotFound)
	wantErr(t, n.DeleteProcess(ctx, "pl", "proc_nope"), ErrNotFound)
	want := []string{"sandbox.created", "process.created", "process.exited", "process.created", "process.exited", "process.deleted"}
	if got := eventTypes(t, n, "pl"); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// TestTerminalGetOrCreate makes 1,000 concurrent PUTs of one terminal id: exactly one
// PTY process is started and every caller sees it.
func TestTerminalGetOrCreate(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.MailboxSize = 2048 })
	ctx := tctx(t)
	mustCreate(t, n, "term")
	const N = 1000
	var wg sync.WaitGroup
	var created atomic.Int32
	procs := make([]string, N)
	start := make(chan struct{})
	for i := range N {
		wg.Go(func() {
			<-start
			in, c, err := n.PutTerminal(ctx, "term", "t1", TerminalSpec{Cols: 100, Rows: 30})
			if err != nil {
				t.Error(err)
				return
			}
			if c {
				created.Add(1)
			}
			procs[i] = in.Process
		})
	}
	close(start)
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("created = %d", created.Load())
	}
	for _, p := range procs {
		if p != procs[0] || p == "" {
			t.Fatalf("callers saw different processes: %q vs %q", p, procs[0])
		}
	}
	list, err := n.ListProcesses(ctx, "term")
	must(t, err)
	ptys := 0
	for _, p := range list {
		if p.PTY && p.Tag == "terminal:t1" {
			ptys++
		}
	}
	if ptys != 1 || len(list) != 1 {
		t.Fatalf("%d PTY processes, %d processes", ptys, len(list))
	}
	info, p, err := n.GetTerminal(ctx, "term", "t1")
	must(t, err)
	if info.Status != "running" || info.Cols != 100 || p.ID() != procs[0] {
		t.Fatalf("info = %+v", info)
	}
	must(t, n.ResizeTerminal(ctx, "term", "t1", 120, 40))
	if in := p.Info(); in.Cols != 120 || in.Rows != 40 {
		t.Fatalf("after resize %dx%d", in.Cols, in.Rows)
	}
	must(t, n.DeleteTerminal(ctx, "term", "t1"))
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("terminal shell not killed")
	}
	_, _, err = n.GetTerminal(ctx, "term", "t1")
	wantErr(t, err, ErrNotFound)
}

// TestCreateDeleteRace starts processes, sessions and terminals while the sandbox is
// deleted (and re-created); afterwards no process started in it is alive.
func TestCreateDeleteRace(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.KillGrace = 300 * time.Millisecond })
	ctx := tctx(t)
	var mu sync.Mutex
	var pids []int
	for round := range 5 {
		id := fmt.Sprintf("race%d", round)
		mustCreate(t, n, id)
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				switch i % 4 {
				case 0:
					if in, err := n.StartProcess(ctx, id, runtime.StartOptions{Command: "sleep 60 & sleep 60"}); err == nil {
						mu.Lock()
						pids = append(pids, in.PID)
						mu.Unlock()
					}
				case 1:
					if _, p, err := n.GetTerminalOrPut(ctx, id, fmt.Sprintf("t%d", i)); err == nil {
						mu.Lock()
						pids = append(pids, p.Info().PID)
						mu.Unlock()
					}
				case 2:
					_, _, _ = n.CreateSession(ctx, id, SessionSpec{ID: fmt.Sprintf("s%d", i)})
					_, _ = n.SessionExec(ctx, id, fmt.Sprintf("s%d", i), runtime.SessionCommand{Command: "sleep 30 &"})
				case 3:
					_, _ = n.Exec(ctx, id, runtime.ExecOptions{Command: "sleep 30"})
				}
			})
		}
		wg.Go(func() {
			time.Sleep(time.Duration(round*15) * time.Millisecond)
			if err := n.DeleteSandbox(ctx, id); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		// Anything that got in after the delete saw no sandbox; clean up a re-create.
		_ = n.DeleteSandbox(ctx, id)
	}
	t.Logf("%d processes and terminals started before a delete", len(pids))
	eventually(t, 15*time.Second, "all processes dead", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	// Nothing of ours is running: the leak check of TestMain also looks for children.
}

// GetTerminalOrPut is PutTerminal returning the process, for tests.
func (n *Node) GetTerminalOrPut(ctx context.Context, sb, id string) (TerminalInfo, *runtime.Process, error) {
	if _, _, err := n.PutTerminal(ctx, sb, id, TerminalSpec{}); err != nil {
		return TerminalInfo{}, nil, err
	}
	return n.GetTerminal(ctx, sb, id)
}

func TestSessions(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "ss")
	in, created, err := n.CreateSession(ctx, "ss", SessionSpec{ID: "s1", Env: map[string]string{"A": "1"}})
	must(t, err)
	if !created || in.Status != runtime.SessionReady {
		t.Fatalf("created=%v info=%+v", created, in)
	}
	_, created, err = n.CreateSession(ctx, "ss", SessionSpec{ID: "s1", Env: map[string]string{"A": "1"}})
	must(t, err)
	if created {
		t.Fatal("same session created twice")
	}
	_, _, err = n.CreateSession(ctx, "ss", SessionSpec{ID: "s1"})
	wantErr(t, err, ErrConflict)

	res, err := n.SessionExec(ctx, "ss", "s1", runtime.SessionCommand{Command: "mkdir -p sub && cd sub && export B=2"})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("res = %+v %s", res, res.Stderr)
	}
	res, err = n.SessionExec(ctx, "ss", "s1", runtime.SessionCommand{Command: "echo $A$B; basename $PWD"})
	must(t, err)
	if string(res.Stdout) != "12\nsub\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
	// A process from the session starts from its snapshot.
	p, err := n.StartProcess(ctx, "ss", runtime.StartOptions{Command: "echo $B; basename $PWD", Session: "s1"})
	must(t, err)
	h, err := n.Process(ctx, "ss", p.ID)
	must(t, err)
	_, err = h.Wait(ctx)
	must(t, err)
	_, err = n.StartProcess(ctx, "ss", runtime.StartOptions{Command: "true", Session: "nope"})
	wantErr(t, err, ErrNotFound)

	// A session command runs off the actor: the sandbox answers while s1's command
	// waits for a file, and s2 (another session) runs in parallel and creates it. If
	// either were serialized behind s1's command, this would deadlock until the
	// command's own 20 s timeout and fail.
	_, _, err = n.CreateSession(ctx, "ss", SessionSpec{ID: "s2"})
	must(t, err)
	done := make(chan error, 1)
	go func() {
		res, err := n.SessionExec(ctx, "ss", "s1", runtime.SessionCommand{
			Command: "until [ -e ../released ]; do sleep 0.01; done; echo released", Timeout: 20 * time.Second})
		if err == nil && string(res.Stdout) != "released\n" {
			err = fmt.Errorf("s1 result %+v", res)
		}
		done <- err
	}()
	w, err := n.Workspace(ctx, "ss")
	must(t, err)
	defer w.Close()
	eventually(t, 10*time.Second, "s1 busy", func() bool {
		in, err := n.GetSession(ctx, "ss", "s1")
		return err == nil && in.Status == runtime.SessionBusy
	})
	_, err = n.GetSandbox(ctx, "ss") // answered while s1's command runs
	must(t, err)
	if _, err := w.Stat("released"); err == nil {
		t.Fatal("released too early")
	}
	res, err = n.SessionExec(ctx, "ss", "s2", runtime.SessionCommand{Command: "touch released"})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("s2: %+v", res)
	}
	must(t, <-done)

	// A command that exits the shell kills the session.
	res, err = n.SessionExec(ctx, "ss", "s2", runtime.SessionCommand{Command: "exit 3"})
	must(t, err)
	if res.ExitCode != 3 {
		t.Fatalf("exit: %+v", res)
	}
	_, err = n.SessionExec(ctx, "ss", "s2", runtime.SessionCommand{Command: "true"})
	wantErr(t, err, ErrConflict)
	wantErr(t, err, runtime.ErrSessionDead)
	info, err := n.GetSession(ctx, "ss", "s2")
	must(t, err)
	if info.Status != runtime.SessionDead {
		t.Fatalf("status %v", info.Status)
	}
	_, created, err = n.CreateSession(ctx, "ss", SessionSpec{ID: "s2", Cwd: "sub"})
	must(t, err)
	if !created {
		t.Fatal("dead session not replaced")
	}
	must(t, n.DeleteSession(ctx, "ss", "s2"))
	_, err = n.GetSession(ctx, "ss", "s2")
	wantErr(t, err, ErrNotFound)
	for _, typ := range []string{"session.created", "session.dead", "session.deleted"} {
		if !slices.Contains(eventTypes(t, n, "ss"), typ) {
			t.Errorf("no %s event", typ)
		}
	}
}

// TestHibernateWake checks idle hibernation with the fake clock: processes end (with
// process.exited), and the next session command rehydrates the session's cwd and env.
func TestHibernateWake(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: 2 * time.Hour}
		c.PassivateAfter = 24 * time.Hour
	})
	ctx := tctx(t)
	mustCreate(t, n, "hw")
	_, _, err := n.CreateSession(ctx, "hw", SessionSpec{ID: "s"})
	must(t, err)
	_, err = n.SessionExec(ctx, "hw", "s", runtime.SessionCommand{Command: "mkdir -p a/b && cd a/b && export K=v1"})
	must(t, err)
	bg, err := n.StartProcess(ctx, "hw", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	_, _, err = n.PutTerminal(ctx, "hw", "tt", TerminalSpec{})
	must(t, err)

	n.clock.Advance(11 * time.Minute)
	eventually(t, 10*time.Second, "hibernated", func() bool {
		in, err := n.GetSandbox(ctx, "hw")
		return err == nil && in.State == StateHibernated
	})
	if alive(bg.PID) {
		t.Fatal("process survived hibernation")
	}
	in, err := n.GetSandbox(ctx, "hw")
	must(t, err)
	if in.Counts.Processes != 0 || in.Counts.Sessions != 1 || in.Counts.Terminals != 1 {
		t.Fatalf("counts %+v", in.Counts)
	}
	terms, err := n.ListTerminals(ctx, "hw")
	must(t, err)
	if len(terms) != 1 || terms[0].Status != "exited" || terms[0].Process != "" {
		t.Fatalf("terminals %+v", terms)
	}
	res, err := n.SessionExec(ctx, "hw", "s", runtime.SessionCommand{Command: `echo "$K $PWD"`})
	must(t, err)
	if got := string(res.Stdout); !strings.HasPrefix(got, "v1 ") || !strings.HasSuffix(got, "/a/b\n") {
		t.Fatalf("after wake: %q", got)
	}
	_, p, err := n.GetTerminal(ctx, "hw", "tt")
	must(t, err)
	if p == nil || p.Info().Status != runtime.StatusRunning {
		t.Fatal("terminal not restarted")
	}
	types := eventTypes(t, n, "hw")
	i := slices.Index(types, "sandbox.hibernated")
	if i < 0 || !slices.Contains(types[:i], "process.exited") || !slices.Contains(types[i:], "sandbox.woke") {
		t.Fatalf("events = %v", types)
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Limits = Budget{MaxDuration: time.Hour, IdleTTL: 2 * time.Hour} })
	ctx := tctx(t)
	mustCreate(t, n, "xp")
	p, err := n.StartProcess(ctx, "xp", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	n.clock.Advance(61 * time.Minute)
	eventually(t, 10*time.Second, "expired", func() bool {
		in, err := n.GetSandbox(ctx, "xp")
		return err == nil && in.State == StateExpired
	})
	if alive(p.PID) {
		t.Fatal("process survived expiry")
	}
	_, err = n.Exec(ctx, "xp", runtime.ExecOptions{Command: "true"})
	wantErr(t, err, ErrExpired)
	_, _, err = n.CreateSession(ctx, "xp", SessionSpec{})
	wantErr(t, err, ErrExpired)
	_, _, err = n.PutTerminal(ctx, "xp", "t", TerminalSpec{})
	wantErr(t, err, ErrExpired)
	must(t, n.DeleteSandbox(ctx, "xp"))
}

// TestCloseReopenSandbox closes the node with work running and reopens the data dir:
// processes ended with process.exited, and the sandbox, budget, session snapshot,
// terminal spec, events and messages are back.
func TestCloseReopenSandbox(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Limits = Budget{MaxProcesses: 5} })
	ctx := tctx(t)
	mustCreate(t, n, "cr")
	_, _, err := n.CreateSession(ctx, "cr", SessionSpec{ID: "s"})
	must(t, err)
	_, err = n.SessionExec(ctx, "cr", "s", runtime.SessionCommand{Command: "mkdir -p w && cd w && export Z=zz"})
	must(t, err)
	p, err := n.StartProcess(ctx, "cr", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	_, _, err = n.PutTerminal(ctx, "cr", "tt", TerminalSpec{Cols: 90, Rows: 20})
	must(t, err)
	_, err = n.PostMessage(ctx, "cr", []byte(`{"m":1}`))
	must(t, err)
	closeNode(t, n)
	if alive(p.PID) {
		t.Fatal("process survived Close")
	}
	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	in, err := n2.GetSandbox(ctx, "cr")
	must(t, err)
	if in.Budget.MaxProcesses != 5 || in.Counts.Sessions != 1 || in.Counts.Terminals != 1 {
		t.Fatalf("info %+v", in)
	}
	types := eventTypes(t, n2, "cr")
	exited := 0
	for _, ty := range types {
		if ty == "process.exited" {
			exited++
		}
	}
	if exited != 2 { // the sleep and the terminal's shell
		t.Fatalf("events %v: %d process.exited", types, exited)
	}
	res, err := n2.SessionExec(ctx, "cr", "s", runtime.SessionCommand{Command: `echo $Z; basename $PWD`})
	must(t, err)
	if string(res.Stdout) != "zz\nw\n" {
		t.Fatalf("session after reopen: %q", res.Stdout)
	}
	ti, _, err := n2.GetTerminal(ctx, "cr", "tt")
	must(t, err)
	if ti.Cols != 90 || ti.Rows != 20 || ti.Status != "running" {
		t.Fatalf("terminal %+v", ti)
	}
	msgs, err := n2.TakeMessages(ctx, "cr", TakeOptions{Max: 10})
	must(t, err)
	if len(msgs) != 1 {
		t.Fatalf("messages %v", msgs)
	}
}

func TestDeleteSandboxKillsAll(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "dk")
	p, err := n.StartProcess(ctx, "dk", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	_, tp, err := n.GetTerminalOrPut(ctx, "dk", "t")
	must(t, err)
	must(t, n.DeleteSandbox(ctx, "dk"))
	for _, pid := range []int{p.PID, tp.Info().PID} {
		if alive(pid) {
			t.Fatalf("pid %d alive after delete", pid)
		}
	}
	if _, err := n.Exec(ctx, "dk", runtime.ExecOptions{Command: "true"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("exec after delete: %v", err)
	}
	list, err := n.ListSandboxes(ctx, nil)
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("list after delete: %+v", list)
	}
}

func TestWorkspace(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "ws")
	w, err := n.Workspace(ctx, "ws")
	must(t, err)
	defer w.Close()
	must(t, w.WriteFile("a/b.txt", strings.NewReader("hello"), nil))
	res, err := n.Exec(ctx, "ws", runtime.ExecOptions{Command: "cat a/b.txt"})
	must(t, err)
	if string(res.Stdout) != "hello" {
		t.Fatalf("exec sees %q", res.Stdout)
	}
	_, _, err = w.Open("../x")
	wantErr(t, err, runtime.ErrEscapes)
	_, err = n.Workspace(ctx, "nope")
	wantErr(t, err, ErrNotFound)
	must(t, n.DeleteSandbox(ctx, "ws"))
	if err := w.WriteFile("c.txt", strings.NewReader("x"), nil); err == nil {
		t.Fatal("workspace handle usable after delete")
	}
}

// TestFailed breaks a sandbox's workspace so the runtime cannot start: the sandbox moves
// to "failed" with the reason, refuses work, and can still be deleted.
func TestFailed(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "fl")
	dir := n.workspaceDir("fl")
	must(t, os.Remove(dir))
	must(t, os.WriteFile(dir, []byte("not a dir"), 0o644))
	_, err := n.Exec(ctx, "fl", runtime.ExecOptions{Command: "true"})
	wantErr(t, err, ErrConflict)
	in, err := n.GetSandbox(ctx, "fl")
	must(t, err)
	if in.State != StateFailed || in.FailReason == "" {
		t.Fatalf("info %+v", in)
	}
	_, err = n.StartProcess(ctx, "fl", runtime.StartOptions{Command: "true"})
	wantErr(t, err, ErrConflict)
	if got := eventTypes(t, n, "fl"); !slices.Equal(got, []string{"sandbox.created", "sandbox.failed"}) {
		t.Fatalf("events %v", got)
	}
	must(t, n.DeleteSandbox(ctx, "fl"))
}

// TestCancelledWork cancels callers of exec and session exec mid-command: they return
// promptly, the actor records the completions (nothing stays in flight), and the
// sandbox keeps working.
func TestCancelledWork(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "cw")
	_, _, err := n.CreateSession(tctx(t), "cw", SessionSpec{ID: "s"})
	must(t, err)
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{name: "exec", run: func(ctx context.Context) error {
			_, err := n.Exec(ctx, "cw", runtime.ExecOptions{Command: "sleep 20"})
			return err
		}},
		{name: "session exec", run: func(ctx context.Context) error {
			_, err := n.SessionExec(ctx, "cw", "s", runtime.SessionCommand{Command: "sleep 20"})
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := tc.run(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s: no error after cancel", tc.name)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: returned after %v", tc.name, d)
		}
	}
	eventually(t, 10*time.Second, "no work in flight", func() bool {
		v, err := call(tctx(t), n.Node, "cw", func(a *sbActor) (int, error) { return a.inflight, nil })
		return err == nil && v == 0
	})
	res, err := n.Exec(tctx(t), "cw", runtime.ExecOptions{Command: "echo ok"})
	must(t, err)
	if string(res.Stdout) != "ok\n" {
		t.Fatalf("after cancels: %q", res.Stdout)
	}
}

// TestReadsAndExecDoNotWrite checks that requests which change nothing durable cost no
// storage write (no fsync): the idle alarm is re-armed lazily, not on every request.
func TestReadsAndExecDoNotWrite(t *testing.T) {
	t.Parallel()
	cs := &countingStore{Storage: openTestBolt(t)}
	n := newTestNode(t, func(c *Config) { c.Storage = cs })
	ctx := tctx(t)
	mustCreate(t, n, "nw")
	_, err := n.Exec(ctx, "nw", runtime.ExecOptions{Command: "true"}) // first: starts the runtime
	must(t, err)
	before := cs.writes.Load()
	for range 5 {
		n.clock.Advance(time.Second) // each request moves the idle deadline
		_, err := n.Exec(ctx, "nw", runtime.ExecOptions{Command: "true"})
		must(t, err)
		_, err = n.GetSandbox(ctx, "nw")
		must(t, err)
		_, err = n.ListProcesses(ctx, "nw")
		must(t, err)
	}
	if got := cs.writes.Load() - before; got != 0 {
		t.Fatalf("%d storage writes for exec and reads", got)
	}
}

func TestDeactivate(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "dv")
	p, err := n.StartProcess(ctx, "dv", runtime.StartOptions{Command: "sleep 300"})
	must(t, err)
	must(t, n.Deactivate(ctx, "dv"))
	if n.active("dv") != nil {
		t.Fatal("still active")
	}
	if alive(p.PID) {
		t.Fatal("process survived deactivation")
	}
	must(t, n.Deactivate(ctx, "dv")) // not active: no-op
	types := eventTypes(t, n, "dv")
	if types[len(types)-1] != "process.exited" {
		t.Fatalf("events %v", types)
	}
	in, err := n.GetSandbox(ctx, "dv")
	must(t, err)
	if in.State != StateRunning || in.Counts.Processes != 0 {
		t.Fatalf("after reactivation %+v", in)
	}
}

// TestSessionBlocksPassivation: a live session shell (which may hold background jobs)
// keeps the actor in memory; hibernation closes it, and then the actor passivates.
func TestSessionBlocksPassivation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.PassivateAfter = time.Minute
		c.Limits = Budget{IdleTTL: 10 * time.Minute}
	})
	ctx := tctx(t)
	mustCreate(t, n, "sp")
	_, _, err := n.CreateSession(ctx, "sp", SessionSpec{ID: "s"})
	must(t, err)
	for range 5 {
		n.clock.Advance(time.Minute)
		time.Sleep(10 * time.Millisecond)
	}
	if n.active("sp") == nil {
		t.Fatal("passivated with a live session")
	}
	eventually(t, 10*time.Second, "hibernated and passivated", func() bool {
		n.clock.Advance(time.Minute)
		return n.active("sp") == nil
	})
	in, err := n.GetSandbox(ctx, "sp")
	must(t, err)
	if in.State != StateHibernated {
		t.Fatalf("state %s", in.State)
	}
}

func TestSandboxCwd(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "cwd", Cwd: "src/app"})
	must(t, err)
	res, err := n.Exec(ctx, "cwd", runtime.ExecOptions{Command: "pwd"})
	must(t, err)
	if !strings.HasSuffix(string(res.Stdout), "/cwd/src/app\n") {
		t.Fatalf("pwd %q", res.Stdout)
	}
	_, _, err = n.CreateSandbox(ctx, SandboxSpec{ID: "cwd2", Cwd: "../../escape"})
	wantErr(t, err, ErrInvalid)
	wantErr(t, err, runtime.ErrEscapes)
	_, err = n.GetSandbox(ctx, "cwd2")
	wantErr(t, err, ErrNotFound)
}

// TestSessionFIFO queues commands on one session while its actor is held, in a known
// mailbox order; released together, they must still run in that order.
func TestSessionFIFO(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "fifo")
	_, _, err := n.CreateSession(ctx, "fifo", SessionSpec{ID: "s"})
	must(t, err)
	unblock := block(t, n, "fifo")
	const N = 20
	var wg sync.WaitGroup
	for i := range N {
		wg.Go(func() {
			if _, err := n.SessionExec(ctx, "fifo", "s", runtime.SessionCommand{Command: fmt.Sprintf("echo %d >> order", i)}); err != nil {
				t.Error(err)
			}
		})
		eventually(t, 10*time.Second, "queued", func() bool { return len(n.active("fifo").mb) == i+1 })
	}
	unblock() // all N turns run in one group; their answers are released together
	wg.Wait()
	res, err := n.Exec(ctx, "fifo", runtime.ExecOptions{Command: "cat order | tr '\\n' ' '"})
	must(t, err)
	var want strings.Builder
	for i := range N {
		fmt.Fprintf(&want, "%d ", i)
	}
	if string(res.Stdout) != want.String() {
		t.Fatalf("order %q, want %q", res.Stdout, want.String())
	}
}
