package actor

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// The output gate holds for reads too: once a read shows a process exited (or a
// session dead), the event log already has process.exited (session.dead). The runtime
// learns of an exit before the watcher's turn records it, so each case polls the read
// as fast as it can, many times, to land in that window.
func TestExitShownOnlyOnceRecorded(t *testing.T) {
	t.Parallel()
	const runs = 30
	type read func(n *testNode, sb, id string) bool // reports whether the read shows the exit
	cases := []struct {
		name string
		read read
	}{
		{"ProcessInfo", func(n *testNode, sb, id string) bool {
			in, err := n.ProcessInfo(tctx(t), sb, id)
			must(t, err)
			return in.Status == runtime.StatusExited
		}},
		{"ListProcesses", func(n *testNode, sb, id string) bool {
			return listed(t, n, sb)[id].Status == runtime.StatusExited
		}},
		{"GetSandbox counts", func(n *testNode, sb, id string) bool {
			in, err := n.GetSandbox(tctx(t), sb)
			must(t, err)
			return in.Counts.Processes == 0
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newTestNode(t, nil)
			mustCreate(t, n, "sb")
			for i := range runs {
				in, err := n.StartProcess(tctx(t), "sb", runtime.StartOptions{Command: fmt.Sprintf("exit %d", i%3)})
				must(t, err)
				waitShown(t, func() bool { return tc.read(n, "sb", in.ID) })
				if !exitRecorded(t, n, "sb", in.ID) {
					t.Fatalf("run %d: %s shows %s exited before process.exited is in the log", i, tc.name, in.ID)
				}
			}
		})
	}
}

func TestTerminalExitShownOnlyOnceRecorded(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "sb")
	for i := range 20 {
		id := fmt.Sprintf("t%d", i)
		in, _, err := n.PutTerminal(tctx(t), "sb", id, TerminalSpec{Shell: "true"})
		must(t, err)
		waitShown(t, func() bool {
			list, err := n.ListTerminals(tctx(t), "sb")
			must(t, err)
			for _, tm := range list {
				if tm.ID == id {
					return tm.Status == string(runtime.StatusExited)
				}
			}
			t.Fatalf("terminal %s not listed", id)
			return false
		})
		if !exitRecorded(t, n, "sb", in.Process) {
			t.Fatalf("run %d: terminal %s shows exited before process.exited of %s is in the log", i, id, in.Process)
		}
	}
}

func TestSessionDeathShownOnlyOnceRecorded(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "sb")
	for i := range 10 {
		id := fmt.Sprintf("s%d", i)
		_, _, err := n.CreateSession(tctx(t), "sb", SessionSpec{ID: id})
		must(t, err)
		done := make(chan error, 1)
		go func() {
			// The shell kills itself: only its own pid, never anything else.
			_, err := n.SessionExec(tctx(t), "sb", id, runtime.SessionCommand{Command: "kill -KILL $$"})
			done <- err
		}()
		waitShown(t, func() bool {
			in, err := n.GetSession(tctx(t), "sb", id)
			must(t, err)
			return in.Status == runtime.SessionStatus("dead")
		})
		if !eventLogged(t, n, "sb", "session.dead", id) {
			t.Fatalf("run %d: session %s shows dead before session.dead is in the log", i, id)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("session exec did not return")
		}
	}
}

// waitShown polls show without pausing until it reports true, for up to 30 s.
func waitShown(tb testing.TB, show func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !show() {
		if time.Now().After(deadline) {
			tb.Fatal("timed out waiting for the read to show the exit")
		}
	}
}

// eventLogged reports whether sb's event log has an event of typ whose data id is id.
func eventLogged(tb testing.TB, n *testNode, sb, typ, id string) bool {
	tb.Helper()
	evs, err := n.Events(tctx(tb), sb, 0, 0)
	must(tb, err)
	for _, e := range evs {
		var d struct{ ID string }
		if e.Type == typ && json.Unmarshal(e.Data, &d) == nil && d.ID == id {
			return true
		}
	}
	return false
}
