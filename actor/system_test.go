package actor

import (
	"context"
	"errors"
	"fmt"
	"github.com/sandgate/sandgate/runtime"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCreateIdempotent(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	in := mustCreate(t, n, "dev1")
	if in.State != StateRunning || in.Node != "n1" || in.Budget != DefaultBudget() {
		t.Fatalf("info = %+v", in)
	}
	tests := []struct {
		name    string
		spec    SandboxSpec
		created bool
		err     error
	}{
		{name: "same settings", spec: SandboxSpec{ID: "dev1", Labels: map[string]string{"k": "v"}}},
		{name: "different labels", spec: SandboxSpec{ID: "dev1"}, err: ErrConflict},
		{name: "different env", spec: SandboxSpec{ID: "dev1", Labels: map[string]string{"k": "v"}, Env: map[string]string{"A": "1"}}, err: ErrConflict},
		{name: "bad id", spec: SandboxSpec{ID: "Bad"}, err: ErrInvalid},
		{name: "server id", spec: SandboxSpec{}, created: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := tctx(t) // the subtest's own: it may wait for a parallel slot longer than the parent's lives
			in, created, err := n.CreateSandbox(ctx, tc.spec)
			if tc.err != nil {
				wantErr(t, err, tc.err)
				return
			}
			must(t, err)
			if created != tc.created || (tc.spec.ID == "" && len(in.ID) != 19) {
				t.Fatalf("created=%v info=%+v", created, in)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	_, err := n.GetSandbox(tctx(t), "nope")
	wantErr(t, err, ErrNotFound)
	if err.Error() != `sandbox "nope" not found` {
		t.Fatalf("message = %q", err)
	}
	wantErr(t, n.DeleteSandbox(tctx(t), "nope"), ErrNotFound)
	_, err = n.Events(tctx(t), "nope", 0, 0)
	wantErr(t, err, ErrNotFound)
	// Absent actors do not linger in memory.
	eventually(t, 5*time.Second, "absent actor passivated", func() bool { return n.ActiveActors() == 0 })
}

// TestOneActivation sends 200 concurrent first requests to a passivated sandbox and to
// a new one: each id is activated exactly once.
func TestOneActivation(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "old")
	passivateAll(t, n)
	base := n.activations.Load()
	const N = 200
	var wg sync.WaitGroup
	var created atomic.Int32
	start := make(chan struct{})
	for i := range N {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				if _, err := n.GetSandbox(tctx(t), "old"); err != nil {
					t.Error(err)
				}
				return
			}
			_, c, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "new"})
			if err != nil {
				t.Error(err)
			}
			if c {
				created.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := n.activations.Load() - base; got != 2 {
		t.Fatalf("activations = %d, want 2", got)
	}
	if created.Load() != 1 {
		t.Fatalf("created = %d, want 1", created.Load())
	}
}

func TestPassivateKeepsState(t *testing.T) {
	t.Parallel()
	// An idle TTL far past what the loop below may advance the clock on a loaded
	// machine, so the sandbox passivates without hibernating first.
	n := newTestNode(t, func(c *Config) {
		c.PassivateAfter = time.Minute
		c.Limits = Budget{IdleTTL: 10000 * time.Hour, MaxDuration: 20000 * time.Hour}
	})
	ctx := tctx(t)
	mustCreate(t, n, "p1")
	_, err := n.PostMessage(ctx, "p1", []byte(`{"x":1}`))
	must(t, err)
	_, err = n.PostEvent(ctx, "p1", "agent.step", []byte(`{"i":1}`))
	must(t, err)
	n.clock.Advance(30 * time.Second)
	if n.ActiveActors() != 1 {
		t.Fatal("passivated too early")
	}
	release, err := n.Attach(ctx, "p1")
	must(t, err)
	n.clock.Advance(5 * time.Minute)
	time.Sleep(20 * time.Millisecond)
	if n.ActiveActors() != 1 {
		t.Fatal("attached actor passivated")
	}
	release()
	eventually(t, 5*time.Second, "release processed", func() bool {
		n.clock.Advance(2 * time.Minute)
		return n.ActiveActors() == 0
	})
	list, err := n.ListSandboxes(ctx, map[string]string{"k": "v"})
	must(t, err)
	if len(list) != 1 || list[0].ID != "p1" || list[0].State != StateRunning {
		t.Fatalf("list = %+v", list)
	}
	if got := eventTypes(t, n, "p1"); !slices.Equal(got, []string{"sandbox.created", "agent.step"}) {
		t.Fatalf("events = %v", got)
	}
	msgs, err := n.TakeMessages(ctx, "p1", TakeOptions{Max: 10})
	must(t, err)
	if len(msgs) != 1 || string(msgs[0].Data) != `{"x":1}` || msgs[0].ID != "msg_1" {
		t.Fatalf("msgs = %+v", msgs)
	}
	seq, err := n.PostEvent(ctx, "p1", "agent.step", nil)
	must(t, err)
	if seq != 3 {
		t.Fatalf("seq after reactivation = %d, want 3", seq)
	}
}

// block occupies sandbox id's actor until the returned func is called.
func block(t *testing.T, n *testNode, id string) (unblock func()) {
	t.Helper()
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = call(context.Background(), n.Node, id, func(a *sbActor) (int, error) {
			close(started)
			<-release
			return 0, nil
		})
	}()
	<-started
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	return func() { once.Do(func() { close(release) }) }
}

func TestMailboxFull(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.MailboxSize = 4 })
	mustCreate(t, n, "mb")
	unblock := block(t, n, "mb")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := n.GetSandbox(tctx(t), "mb"); err != nil {
				t.Error(err)
			}
		})
	}
	eventually(t, 5*time.Second, "mailbox filled", func() bool { return len(n.active("mb").mb) == 4 })
	_, err := n.GetSandbox(tctx(t), "mb")
	wantErr(t, err, ErrMailboxFull)
	unblock()
	wg.Wait()
	_, err = n.GetSandbox(tctx(t), "mb")
	must(t, err)
}

func TestCancelledCaller(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "cc")
	unblock := block(t, n, "cc")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := n.PostEvent(ctx, "cc", "agent.never", nil); errc <- err }()
	eventually(t, 5*time.Second, "call queued", func() bool { return len(n.active("cc").mb) == 1 })
	cancel()
	select {
	case err := <-errc:
		wantErr(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled caller not released")
	}
	unblock()
	// The actor is not wedged, and the cancelled turn was skipped.
	_, err := n.PostEvent(tctx(t), "cc", "agent.after", nil)
	must(t, err)
	if got := eventTypes(t, n, "cc"); !slices.Equal(got, []string{"sandbox.created", "agent.after"}) {
		t.Fatalf("events = %v", got)
	}
}

func TestAdmission(t *testing.T) {
	t.Parallel()
	var deny atomic.Bool
	n := newTestNode(t, func(c *Config) {
		c.Admission = func(string) error {
			if deny.Load() {
				return errors.New("lease expired")
			}
			return nil
		}
	})
	mustCreate(t, n, "ad")
	deny.Store(true)
	_, err := n.GetSandbox(tctx(t), "ad")
	wantErr(t, err, ErrUnavailable)
	deny.Store(false)
	_, err = n.GetSandbox(tctx(t), "ad")
	must(t, err)
}

func TestFencing(t *testing.T) {
	t.Parallel()
	var epoch atomic.Uint64
	epoch.Store(5)
	n := newTestNode(t, func(c *Config) { c.Epoch = func(string) uint64 { return epoch.Load() } })
	ctx := tctx(t)
	mustCreate(t, n, "fx")
	// Another owner writes at a newer epoch.
	must(t, n.store.Write(ctx, &Batch{Sandbox: "fx", Epoch: 6, Ops: []Op{{Key: []byte("z"), Value: []byte("1")}}}))
	_, err := n.PostEvent(ctx, "fx", "agent.stale", nil)
	wantErr(t, err, ErrUnavailable)
	wantErr(t, err, ErrFenced)
	if got := eventTypes(t, n, "fx"); !slices.Equal(got, []string{"sandbox.created"}) {
		t.Fatalf("fenced write landed: %v", got)
	}
	// With the new epoch the sandbox works again (fresh activation from storage).
	epoch.Store(6)
	seq, err := n.PostEvent(ctx, "fx", "agent.ok", nil)
	must(t, err)
	if seq != 2 {
		t.Fatalf("seq = %d, want 2", seq)
	}
}

func TestEventSeqConcurrent(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "ev")
	sub, err := n.SubscribeEvents(tctx(t), "ev", 0)
	must(t, err)
	defer sub.Close()
	const writers, per = 8, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				seq, err := n.PostEvent(tctx(t), "ev", "agent.w", fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[seq] {
					t.Errorf("seq %d twice", seq)
				}
				seen[seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	evs, err := n.Events(tctx(t), "ev", 0, 10000)
	must(t, err)
	if len(evs) != writers*per+1 {
		t.Fatalf("%d events", len(evs))
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	// The live follower saw all of them in order.
	for i := range evs {
		e, err := sub.Next(tctx(t))
		must(t, err)
		if e.Seq != uint64(i+1) {
			t.Fatalf("follower got seq %d at %d", e.Seq, i)
		}
	}
	// since/limit
	page, err := n.Events(tctx(t), "ev", 10, 5)
	must(t, err)
	if len(page) != 5 || page[0].Seq != 11 {
		t.Fatalf("page = %v", page)
	}
}

func TestEventLogBounded(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.EventLogLimit = 10 })
	mustCreate(t, n, "eb")
	for range 25 {
		_, err := n.PostEvent(tctx(t), "eb", "agent.x", nil)
		must(t, err)
	}
	evs, err := n.Events(tctx(t), "eb", 0, 0)
	must(t, err)
	if len(evs) != 10 || evs[0].Seq != 17 || evs[9].Seq != 26 {
		t.Fatalf("got %d events from %d", len(evs), evs[0].Seq)
	}
}

func TestSubscribeDeleted(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "sd")
	sub, err := n.SubscribeEvents(tctx(t), "sd", 0)
	must(t, err)
	defer sub.Close()
	e, err := sub.Next(tctx(t))
	must(t, err)
	if e.Type != "sandbox.created" {
		t.Fatalf("first = %v", e.Type)
	}
	go func() { _ = n.DeleteSandbox(context.Background(), "sd") }()
	e, err = sub.Next(tctx(t))
	must(t, err)
	if e.Type != "sandbox.deleted" || e.Seq != 2 {
		t.Fatalf("got %+v", e)
	}
	if _, err := sub.Next(tctx(t)); err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("after delete: %v", err)
	}
	_, err = n.GetSandbox(tctx(t), "sd")
	wantErr(t, err, ErrNotFound)
}

func TestPostEventInvalid(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "pi")
	for _, typ := range []string{"sandbox.created", "agent.", "agent", ""} {
		_, err := n.PostEvent(tctx(t), "pi", typ, nil)
		wantErr(t, err, ErrInvalid)
	}
	_, err := n.PostEvent(tctx(t), "pi", "agent.x", []byte("{bad"))
	wantErr(t, err, ErrInvalid)
}

// TestLongPoll checks that a waiting TakeMessages returns after a post, not when its
// wait runs out. It logs the measured wake latency (milliseconds when idle; a loaded
// machine stretches it, so the bound only tells a wake from a timeout).
func TestLongPoll(t *testing.T) {
	t.Parallel()
	const wait = 10 * time.Second
	n := newTestNode(t, nil)
	mustCreate(t, n, "lp")
	var lat []time.Duration
	for range 5 {
		type got struct {
			msgs []Message
			at   time.Time
			err  error
		}
		ch := make(chan got, 1)
		go func() {
			m, err := n.TakeMessages(tctx(t), "lp", TakeOptions{Wait: wait, Max: 10})
			ch <- got{m, time.Now(), err}
		}()
		time.Sleep(30 * time.Millisecond) // let the taker wait
		t0 := time.Now()
		_, err := n.PostMessage(tctx(t), "lp", []byte(`"hi"`))
		must(t, err)
		g := <-ch
		must(t, g.err)
		if len(g.msgs) != 1 || string(g.msgs[0].Data) != `"hi"` {
			t.Fatalf("msgs = %+v", g.msgs)
		}
		lat = append(lat, g.at.Sub(t0))
	}
	slices.Sort(lat)
	t.Logf("long-poll wake latency (post start → take returns): min %v median %v max %v", lat[0], lat[2], lat[4])
	if lat[4] > wait/2 {
		t.Fatalf("a take returned %v after the post: it was not woken", lat[4])
	}
	// Timeout with nothing posted.
	start := time.Now()
	msgs, err := n.TakeMessages(tctx(t), "lp", TakeOptions{Wait: 50 * time.Millisecond, Max: 10})
	must(t, err)
	if len(msgs) != 0 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("msgs=%v after %v", msgs, time.Since(start))
	}
}

func TestMessagesFIFO(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.MessageQueueLimit = 5 })
	mustCreate(t, n, "mq")
	for i := range 5 {
		_, err := n.PostMessage(tctx(t), "mq", fmt.Appendf(nil, "%d", i))
		must(t, err)
	}
	_, err := n.PostMessage(tctx(t), "mq", []byte("6"))
	wantErr(t, err, ErrBudgetExceeded)
	a, err := n.TakeMessages(tctx(t), "mq", TakeOptions{Max: 2})
	must(t, err)
	b, err := n.TakeMessages(tctx(t), "mq", TakeOptions{Max: 10})
	must(t, err)
	var got []string
	for _, m := range append(a, b...) {
		got = append(got, string(m.Data))
	}
	if !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("got %v", got)
	}
}

func TestIdleAndMaxDuration(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: time.Hour}
		c.PassivateAfter = 24 * time.Hour
	})
	mustCreate(t, n, "life")
	state := func() string {
		in, err := n.GetSandbox(tctx(t), "life")
		must(t, err)
		return in.State
	}
	n.clock.Advance(9 * time.Minute)
	_, err := n.PostEvent(tctx(t), "life", "agent.busy", nil) // activity at 9 min
	must(t, err)
	n.clock.Advance(2 * time.Minute) // 11 min: the first alarm fires early and re-arms
	if s := state(); s != StateRunning {
		t.Fatalf("state at 11m = %s", s)
	}
	n.clock.Advance(9 * time.Minute) // 20 min: idle 11 min
	eventually(t, 5*time.Second, "hibernated", func() bool { return state() == StateHibernated })
	n.clock.Advance(41 * time.Minute) // past max duration
	eventually(t, 5*time.Second, "expired", func() bool { return state() == StateExpired })
	want := []string{"sandbox.created", "agent.busy", "sandbox.hibernated", "sandbox.expired"}
	if got := eventTypes(t, n, "life"); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if n.alarms.len() != 0 {
		t.Fatal("expired sandbox still has an alarm")
	}
}

// TestReopen closes the node and opens a new one on the same data dir: everything
// durable comes back, alarms included.
func TestReopen(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.Limits = Budget{IdleTTL: time.Hour, MaxProcesses: 3} })
	ctx := tctx(t)
	in := mustCreate(t, n, "ro")
	_, err := n.PostMessage(ctx, "ro", []byte(`[1]`))
	must(t, err)
	_, err = n.PostEvent(ctx, "ro", "agent.a", nil)
	must(t, err)
	closeNode(t, n)
	_, err = n.GetSandbox(ctx, "ro")
	wantErr(t, err, ErrUnavailable)

	cfg := *n.cfg
	n2 := reopen(t, &cfg, n.clock)
	got, err := n2.GetSandbox(ctx, "ro")
	must(t, err)
	if got.Budget != in.Budget || got.Budget.MaxProcesses != 3 || !got.CreatedAt.Equal(in.CreatedAt) {
		t.Fatalf("after reopen %+v, before %+v", got, in)
	}
	msgs, err := n2.TakeMessages(ctx, "ro", TakeOptions{Max: 5})
	must(t, err)
	if len(msgs) != 1 || string(msgs[0].Data) != "[1]" {
		t.Fatalf("msgs = %+v", msgs)
	}
	if n2.alarms.len() != 1 {
		t.Fatal("alarm not reloaded")
	}
	n2.clock.Advance(2 * time.Hour)
	eventually(t, 5*time.Second, "hibernation after reopen", func() bool {
		in, err := n2.GetSandbox(ctx, "ro")
		return err == nil && in.State == StateHibernated
	})
}

func TestManySandboxesGroupCommit(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	const N = 300
	var wg sync.WaitGroup
	for i := range N {
		wg.Go(func() {
			if _, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: fmt.Sprintf("g%03d", i), Labels: map[string]string{"g": fmt.Sprint(i % 3)}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, err := n.ListSandboxes(tctx(t), map[string]string{"g": "1"})
	must(t, err)
	if len(list) != N/3 {
		t.Fatalf("listed %d", len(list))
	}
	all, err := n.ListSandboxes(tctx(t), nil)
	must(t, err)
	if len(all) != N {
		t.Fatalf("listed %d", len(all))
	}
}

// TestInlineTurnsKeepMailboxOrder checks the caller-runs path: a call on an idle actor
// runs on the caller's goroutine, but never ahead of anything already queued, user or
// system, and never beside another turn.
func TestInlineTurnsKeepMailboxOrder(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "io")
	a := n.active("io")
	var order []string // touched only in turns, which never overlap
	unblock := block(t, n, "io")
	a.postSelf(func(a *sbActor) (any, error) { order = append(order, "system"); return nil, nil })
	queued := make(chan error, 1)
	go func() {
		_, err := call(tctx(t), n.Node, "io", func(a *sbActor) (int, error) {
			order = append(order, "user")
			return 0, nil
		})
		queued <- err
	}()
	eventually(t, 10*time.Second, "user call queued", func() bool { return len(a.mb) == 1 })
	unblock()
	must(t, <-queued)
	_, err := call(tctx(t), n.Node, "io", func(a *sbActor) (int, error) {
		order = append(order, "inline")
		return 0, nil
	})
	must(t, err)
	if got := strings.Join(order, " "); got != "system user inline" {
		t.Fatalf("turns ran as %q, want the mailbox's order", got)
	}
	// With anything counted as queued, a call must take the mailbox.
	a.mu.Lock()
	a.queued++
	a.mu.Unlock()
	r := &request{ctx: tctx(t), fn: func(*sbActor) (any, error) { return nil, nil }, done: make(chan result, 1)}
	if a.runInline(r) {
		t.Fatal("a call ran inline past a queued request")
	}
	a.mu.Lock()
	a.queued--
	a.mu.Unlock()
}

// TestPassivatesAfterLongExec runs an exec that outlasts the passivation delay: its
// completion, run on the caller's goroutine, must leave the passivation to the actor,
// which then passivates the idle sandbox.
func TestPassivatesAfterLongExec(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.PassivateAfter = time.Minute })
	mustCreate(t, n, "long")
	ctx := tctx(t)
	done := make(chan error, 1)
	go func() {
		res, err := n.Exec(ctx, "long", runtime.ExecOptions{Command: "while [ ! -f go ]; do sleep 0.01; done; echo ran"})
		if err == nil && string(res.Stdout) != "ran\n" {
			err = fmt.Errorf("stdout %q", res.Stdout)
		}
		done <- err
	}()
	eventually(t, 10*time.Second, "exec running", func() bool {
		in, err := call(ctx, n.Node, "long", func(a *sbActor) (int, error) { return a.inflight, nil })
		return err == nil && in == 1
	})
	n.clock.Advance(2 * time.Minute) // the exec is work: no passivation while it runs
	if n.ActiveActors() != 1 {
		t.Fatal("passivated during an exec")
	}
	n.clock.Advance(2 * time.Minute) // the last user turn is now long ago
	// Let the command end without another request to the sandbox.
	must(t, os.WriteFile(filepath.Join(n.workspaceDir("long"), "go"), nil, 0o644))
	must(t, <-done)
	eventually(t, 30*time.Second, "passivation after the exec", func() bool {
		n.clock.Advance(2 * time.Minute)
		return n.ActiveActors() == 0
	})
}
