package actor

import (
	"encoding/json"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// TestProcessEventData: process.created and process.exited carry the process object's
// fields with its nulls: no command for argv, no tag or session when unset, and a
// signal with no exit code for a process a signal ended.
func TestProcessEventData(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "ed")
	in, err := n.StartProcess(ctx, "ed", runtime.StartOptions{Argv: []string{"sleep", "30"}})
	must(t, err)
	p, err := n.Process(ctx, "ed", in.ID)
	must(t, err)
	must(t, p.Signal(syscall.SIGKILL))
	_, err = p.Wait(ctx)
	must(t, err)
	want := map[string]string{
		"process.created": `{"argv":["sleep","30"],"command":null,"id":"` + in.ID + `","pid":` + strconv.Itoa(in.PID) + `,"pty":false,"session":null,"tag":null}`,
		"process.exited":  `{"exit_code":null,"id":"` + in.ID + `","signal":"SIGKILL"}`,
	}
	eventually(t, 10*time.Second, "process.exited", func() bool {
		evs, err := n.Events(ctx, "ed", 0, 0)
		must(t, err)
		got := map[string]string{}
		for _, e := range evs {
			got[e.Type] = string(e.Data)
		}
		if got["process.exited"] == "" {
			return false
		}
		for typ, w := range want {
			if got[typ] != w {
				t.Fatalf("%s data %s, want %s", typ, got[typ], w)
			}
		}
		return true
	})
}

// TestBuiltinEventData: every built-in event type's data is a JSON object ({} when
// there is nothing to say), and sandbox.created's labels are {} for a sandbox made
// without labels, as the sandbox object shows them.
func TestBuiltinEventData(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: time.Hour, MaxProcesses: 2}
		c.PassivateAfter = 24 * time.Hour
	})
	ctx := tctx(t)
	const sb = "bd"
	_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: sb})
	must(t, err)

	// process.created, process.exited, process.deleted
	in, err := n.StartProcess(ctx, sb, runtime.StartOptions{Command: "true"})
	must(t, err)
	p, err := n.Process(ctx, sb, in.ID)
	must(t, err)
	_, err = p.Wait(ctx)
	must(t, err)
	must(t, n.DeleteProcess(ctx, sb, in.ID))
	// session.created, session.dead, session.deleted
	_, _, err = n.CreateSession(ctx, sb, SessionSpec{ID: "s"})
	must(t, err)
	_, _ = n.SessionExec(ctx, sb, "s", runtime.SessionCommand{Command: "exit 3"})
	must(t, n.DeleteSession(ctx, sb, "s"))
	// terminal.created, terminal.deleted
	_, _, err = n.PutTerminal(ctx, sb, "t", TerminalSpec{})
	must(t, err)
	must(t, n.DeleteTerminal(ctx, sb, "t"))
	// budget.denied
	for range 2 {
		_, err = n.StartProcess(ctx, sb, runtime.StartOptions{Command: "sleep 300"})
		must(t, err)
	}
	_, err = n.StartProcess(ctx, sb, runtime.StartOptions{Command: "sleep 300"})
	wantErr(t, err, ErrBudgetExceeded)
	// sandbox.hibernated, sandbox.woke, sandbox.expired
	n.clock.Advance(11 * time.Minute)
	eventually(t, 10*time.Second, "hibernated", func() bool {
		in, err := n.GetSandbox(ctx, sb)
		return err == nil && in.State == StateHibernated
	})
	_, err = n.Exec(ctx, sb, runtime.ExecOptions{Command: "true"})
	must(t, err)
	n.clock.Advance(time.Hour)
	eventually(t, 10*time.Second, "expired", func() bool {
		in, err := n.GetSandbox(ctx, sb)
		return err == nil && in.State == StateExpired
	})
	evs, err := n.Events(ctx, sb, 0, 0)
	must(t, err)
	// sandbox.deleted reaches followers only: the log goes with the sandbox.
	sub, err := n.SubscribeEvents(ctx, sb, evs[len(evs)-1].Seq)
	must(t, err)
	defer sub.Close()
	must(t, n.DeleteSandbox(ctx, sb))
	e, err := sub.Next(ctx)
	must(t, err)
	evs = append(evs, e)

	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.Type] = true
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e.Data, &obj); err != nil || obj == nil {
			t.Errorf("%s data %s is not an object", e.Type, e.Data)
		}
		if e.Type == "sandbox.created" && string(obj["labels"]) != "{}" {
			t.Errorf("sandbox.created data %s, want labels {}", e.Data)
		}
	}
	for _, typ := range []string{"sandbox.created", "sandbox.hibernated", "sandbox.woke", "sandbox.expired",
		"sandbox.deleted", "process.created", "process.exited", "process.deleted", "session.created",
		"session.dead", "session.deleted", "terminal.created", "terminal.deleted", "budget.denied"} {
		if !seen[typ] {
			t.Errorf("no %s event", typ)
		}
	}
}
