package actor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"
	"github.com/sandgate/sandgate/runtime"
)

// ownership is what the cluster tells a node through Config.Admission and
// Config.Epoch, as atomics a test flips: whether the node may run sandboxes now (its
// lease and its table) and the sandboxes' owner epoch.
type ownership struct {
	deny  atomic.Bool
	epoch atomic.Uint64
}

var errNotOwner = errors.New("not the owner")

func (o *ownership) config(c *Config) {
	c.Admission = func(string) error {
		if o.deny.Load() {
			return errNotOwner
		}
		return nil
	}
	c.Epoch = func(string) uint64 { return o.epoch.Load() }
}

// escapee starts, in sandbox sb, a shell whose child moves to a session of its own
// (setsid) and then sleeps, and returns the pids of the shell and of that child.
func escapee(tb testing.TB, n *testNode, sb string) (shell, child int) {
	tb.Helper()
	script := `setsid sh -c 'echo $$ > escapee.pid; exec sleep 300' >/dev/null 2>&1 &
while [ ! -s escapee.pid ]; do sleep 0.01; done; exec sleep 300`
	p, err := n.StartProcess(tctx(tb), sb, runtime.StartOptions{Argv: []string{"sh", "-c", script}})
	must(tb, err)
	var b []byte
	eventually(tb, 10*time.Second, "the escapee's pid", func() bool {
		b, err = os.ReadFile(filepath.Join(n.workspaceDir(sb), "escapee.pid"))
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	})
	child, err = strconv.Atoi(strings.TrimSpace(string(b)))
	must(tb, err)
	return p.PID, child
}

// pidGone reports whether pid has exited (a zombie counts: it runs nothing).
func pidGone(pid int) bool {
	st := proctest.StatusField("/proc", pid, "State")
	return st == "" || st[0] == 'Z' || st[0] == 'X'
}

// storedEvents returns sb's event types as stored, without asking any actor.
func storedEvents(tb testing.TB, n *testNode, sb string) []string {
	tb.Helper()
	var out []string
	must(tb, n.store.Read(context.Background(), sb, func(r Reader) error {
		r.Scan(pfxEvent, nil, func(_, v []byte) bool {
			var e eventRec
			must(tb, json.Unmarshal(v, &e))
			out = append(out, e.Type)
			return true
		})
		return nil
	}))
	return out
}

// exitReasons returns the reason of each process.exited event of sb, by process id.
func exitReasons(tb testing.TB, n *testNode, sb string) map[string]any {
	tb.Helper()
	out := map[string]any{}
	for id, d := range exitedEvents(tb, n, sb) {
		out[id] = d["reason"]
	}
	return out
}

// TestFence fences a node whose sandboxes run processes (one with a setsid child):
// Fence returns at once, every process dies, nothing is written (no process.exited),
// requests are refused while admission refuses, and once it admits again the
// sandboxes are activated from storage and record the lost processes as owner_lost.
func TestFence(t *testing.T) {
	t.Parallel()
	if how, err := runtime.Containment(); err != nil {
		t.Skipf("setsid descendants are not contained here (%s): %v", how, err)
	}
	var own ownership
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-1"; own.config(c) })
	ctx := tctx(t)
	mustCreate(t, n, "fa")
	mustCreate(t, n, "fb")
	shell, child := escapee(t, n, "fa")
	p, err := n.StartProcess(ctx, "fb", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	before := map[string][]string{"fa": storedEvents(t, n, "fa"), "fb": storedEvents(t, n, "fb")}

	own.deny.Store(true) // the lease ran out
	n.Fence("lease expired")
	eventually(t, 30*time.Second, "processes gone", func() bool {
		return pidGone(shell) && pidGone(child) && pidGone(p.PID)
	})
	eventually(t, 10*time.Second, "activations gone", func() bool { return n.ActiveActors() == 0 })
	for sb, want := range before {
		if got := storedEvents(t, n, sb); !slices.Equal(got, want) {
			t.Fatalf("%s: events %v after the fence, want %v: a fenced node wrote", sb, got, want)
		}
	}
	_, err = n.GetSandbox(ctx, "fa")
	wantErr(t, err, ErrUnavailable)
	wantErr(t, err, errNotOwner)

	own.deny.Store(false) // the lease is back
	in, err := n.GetSandbox(ctx, "fb")
	must(t, err)
	if in.Counts.Processes != 0 {
		t.Fatalf("counts.processes = %d after the fence", in.Counts.Processes)
	}
	if got := exitReasons(t, n, "fb"); got[p.ID] != ownerLostReason || len(got) != 1 {
		t.Fatalf("process.exited reasons after the fence: %v", got)
	}
	_, err = n.Exec(ctx, "fa", runtime.ExecOptions{Command: "true"})
	must(t, err)
}

// TestFenceFailsQueued fences a node while an actor is in the middle of a turn with a
// request queued behind it: Fence does not wait for the turn, the sandbox's process
// dies while the turn still runs, the queued request fails with ErrUnavailable, the
// turn's writes are dropped, and the sandbox works again afterwards.
func TestFenceFailsQueued(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-2" })
	ctx := tctx(t)
	mustCreate(t, n, "fq")
	p, err := n.StartProcess(ctx, "fq", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), n.Node, "fq", func(a *sbActor) (int, error) {
			a.emit("agent.dropped", nil) // a write of a turn that is still running at the fence
			close(started)
			<-release
			return 0, nil
		})
		blocked <- err
	}()
	<-started
	queued := make(chan error, 1)
	go func() { _, err := n.PostEvent(ctx, "fq", "agent.queued", nil); queued <- err }()
	eventually(t, 10*time.Second, "request queued", func() bool { return len(n.active("fq").mb) == 1 })

	n.Fence("lease expired") // returns although the actor is busy
	// The processes die at once, not when the actor's turn ends.
	eventually(t, 30*time.Second, "process killed during the turn", func() bool { return pidGone(p.PID) })
	close(release)
	wantErr(t, <-queued, ErrUnavailable)
	wantErr(t, <-blocked, ErrUnavailable)
	if got := storedEvents(t, n, "fq"); !slices.Equal(got, []string{"sandbox.created", "process.created"}) {
		t.Fatalf("events %v: a fenced activation wrote", got)
	}
	_, err = n.PostEvent(ctx, "fq", "agent.after", nil)
	must(t, err)
}

// TestEpochMove moves a sandbox's owner epoch under an active actor: the next request
// is served by a fresh activation loaded from storage, the old one's processes are
// killed unrecorded (then recorded as owner_lost), and writes carry the new epoch.
func TestEpochMove(t *testing.T) {
	t.Parallel()
	var own ownership
	own.epoch.Store(1)
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-3"; own.config(c) })
	ctx := tctx(t)
	mustCreate(t, n, "ep")
	p, err := n.StartProcess(ctx, "ep", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	acts := n.activations.Load()

	own.epoch.Store(2)
	// Another node wrote at epoch 2 in the meantime: memory of the old activation is stale.
	must(t, n.store.Write(ctx, &Batch{Sandbox: "ep", Epoch: 2, Ops: []Op{{Key: []byte("z"), Value: []byte("1")}}}))
	seq, err := n.PostEvent(ctx, "ep", "agent.after", nil)
	must(t, err)
	if got := n.activations.Load(); got != acts+1 {
		t.Fatalf("%d activations, want %d: the request was not served by a fresh one", got, acts+1)
	}
	eventually(t, 30*time.Second, "old process gone", func() bool { return pidGone(p.PID) })
	evs := storedEvents(t, n, "ep")
	if want := []string{"sandbox.created", "process.created", "process.exited", "agent.after"}; !slices.Equal(evs, want) {
		t.Fatalf("events %v, want %v", evs, want)
	}
	if got := exitReasons(t, n, "ep"); got[p.ID] != ownerLostReason {
		t.Fatalf("exit reasons %v", got)
	}
	if seq != 4 {
		t.Fatalf("seq = %d, want 4", seq)
	}
	// The fresh activation writes at epoch 2: a writer at 1 is refused.
	wantErr(t, n.store.Write(ctx, &Batch{Sandbox: "ep", Epoch: 1, Ops: []Op{{Key: []byte("y"), Value: []byte("1")}}}), ErrFenced)
}

// TestRelease ends the activation of a sandbox the table gave to another node:
// processes killed, nothing written; requests go to a fresh activation, refused while
// this node may not run it.
func TestRelease(t *testing.T) {
	t.Parallel()
	var own ownership
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-4"; own.config(c) })
	ctx := tctx(t)
	mustCreate(t, n, "rl")
	mustCreate(t, n, "stay")
	p, err := n.StartProcess(ctx, "rl", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	q, err := n.StartProcess(ctx, "stay", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	before := storedEvents(t, n, "rl")
	if got := n.ActiveSandboxes(); !slices.Equal(got, []string{"rl", "stay"}) {
		t.Fatalf("active sandboxes %v", got)
	}

	n.Release([]string{"rl", "not-active"})
	eventually(t, 30*time.Second, "released process gone", func() bool { return pidGone(p.PID) })
	eventually(t, 10*time.Second, "activation gone", func() bool { return n.active("rl") == nil })
	if pidGone(q.PID) {
		t.Fatal("a sandbox that was not released lost its process")
	}
	if got := n.ActiveSandboxes(); !slices.Equal(got, []string{"stay"}) {
		t.Fatalf("active sandboxes after release %v", got)
	}
	if got := storedEvents(t, n, "rl"); !slices.Equal(got, before) {
		t.Fatalf("events %v after release, want %v", got, before)
	}
	own.deny.Store(true)
	_, err = n.GetSandbox(ctx, "rl")
	wantErr(t, err, errNotOwner)
	own.deny.Store(false)
	_, err = n.GetSandbox(ctx, "rl")
	must(t, err)
}

// TestCloseNotAdmitted closes a node that may not run its sandboxes any more: their
// processes are ended, but nothing is written (no process.exited).
func TestCloseNotAdmitted(t *testing.T) {
	t.Parallel()
	st := openTestBolt(t)
	var own ownership
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-5"; c.Storage = st; own.config(c) })
	ctx := tctx(t)
	mustCreate(t, n, "cl")
	p, err := n.StartProcess(ctx, "cl", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	must(t, err)
	before := storedEvents(t, n, "cl")
	own.deny.Store(true)
	closeNode(t, n)
	if !pidGone(p.PID) {
		t.Fatal("the process outlived Close")
	}
	if got := storedEvents(t, n, "cl"); !slices.Equal(got, before) {
		t.Fatalf("events %v after Close, want %v", got, before)
	}
}

// TestCommitHalted: once an activation is halted, no commit of it writes, whoever
// commits (a passivation or Close that was under way when Fence came, here a turn).
func TestCommitHalted(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-6" })
	mustCreate(t, n, "ch")
	fenced := fmt.Errorf("%w: test fence", ErrUnavailable)
	var commitErr error
	_, err := call(tctx(t), n.Node, "ch", func(a *sbActor) (int, error) {
		a.halt(fenced, false)
		a.emit("agent.late", nil)
		commitErr = a.commit()
		return 0, nil
	})
	wantErr(t, err, fenced)
	wantErr(t, commitErr, ErrUnavailable)
	if got := storedEvents(t, n, "ch"); !slices.Equal(got, []string{"sandbox.created"}) {
		t.Fatalf("events %v: a halted activation committed", got)
	}
}

// TestReleaseDuringSessionExec: a session command running when its activation ends
// (here a release, as when the sandbox moves) answers unavailable, not "session
// dead": the session is not dead, and a retry meets it again with its cwd.
func TestReleaseDuringSessionExec(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-session" })
	ctx := tctx(t)
	mustCreate(t, n, "rs")
	_, _, err := n.CreateSession(ctx, "rs", SessionSpec{ID: "s"})
	must(t, err)
	_, err = n.SessionExec(ctx, "rs", "s", runtime.SessionCommand{Command: "mkdir -p d && cd d"})
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := n.SessionExec(ctx, "rs", "s", runtime.SessionCommand{Command: "echo started > ../started; sleep 300"})
		done <- err
	}()
	eventually(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(n.workspaceDir("rs"), "started"))
		return err == nil
	})
	n.Release([]string{"rs"})
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConflict) || errors.Is(err, runtime.ErrSessionDead) {
			t.Fatalf("exec under a released activation: %v; want ErrUnavailable alone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not end with its activation")
	}
	res, err := n.SessionExec(ctx, "rs", "s", runtime.SessionCommand{Command: "basename $PWD"})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "d" {
		t.Fatalf("after the release: %q, %v; want the session back in d", res.Stdout, err)
	}
}

// TestReleaseDuringExec: a one-shot exec killed because its activation ended
// answers unavailable, not the exit status of the kill.
func TestReleaseDuringExec(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-exec" })
	mustCreate(t, n, "rx")
	done := startLongExec(t, n, "rx")
	n.Release([]string{"rx"})
	wantUnavailable(t, done, "exec under a released activation")
}

// TestReleaseDuringExecWhileActorBusy: Release kills the runtime at once, from
// outside, while the actor's goroutine may still be in a turn and not yet have
// stopped. The killed exec must answer unavailable then too, not the status of the
// kill (this ordering made TestReleaseDuringExec fail on a loaded machine).
func TestReleaseDuringExecWhileActorBusy(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "fence-exec-busy" })
	mustCreate(t, n, "rb")
	done := startLongExec(t, n, "rb")
	a := n.active("rb")
	if a == nil {
		t.Fatal("sandbox rb is not active while its command runs")
	}
	holding, hold := make(chan struct{}), make(chan struct{})
	a.postSelf(func(*sbActor) (any, error) { close(holding); <-hold; return nil, nil })
	defer close(hold)
	select {
	case <-holding:
	case <-time.After(30 * time.Second):
		t.Fatal("the actor did not run the holding turn")
	}
	n.Release([]string{"rb"})
	wantUnavailable(t, done, "exec under a released activation, actor busy")
}

// TestDeactivateDuringExec: a planned move (Deactivate) kills a running exec in its
// turn and commits before the activation stops; the exec, back before that, must
// answer unavailable, not the status of the kill.
func TestDeactivateDuringExec(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.NodeID = "deactivate-exec" })
	ctx := tctx(t)
	mustCreate(t, n, "dx")
	done := startLongExec(t, n, "dx")
	must(t, n.Deactivate(ctx, "dx"))
	wantUnavailable(t, done, "exec under a deactivated activation")
}

// startLongExec starts an exec of a command that runs for minutes in sandbox sb and
// returns once it runs; the channel gets what Exec returned.
func startLongExec(t *testing.T, n *testNode, sb string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := n.Exec(tctx(t), sb, runtime.ExecOptions{Argv: []string{"sh", "-c", "echo > started; sleep 300"}})
		done <- err
	}()
	eventually(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(n.workspaceDir(sb), "started"))
		return err == nil
	})
	return done
}

// wantUnavailable fails t unless the exec behind done answers ErrUnavailable within
// 30 s; what names the situation.
func wantUnavailable(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: %v; want ErrUnavailable", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not end with its activation")
	}
}
