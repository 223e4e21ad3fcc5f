package actor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// outcomeStore makes the next Write of one sandbox end with an unknown outcome, as
// a cluster leader lost while committing it would: either the batch was applied
// anyway, or it never was. Every other Write goes through.
type outcomeStore struct {
	Storage
	mu      sync.Mutex
	sandbox string // "": disarmed
	apply   bool
	held    chan struct{} // if set: closed when the armed write starts, which then waits for release
	release chan struct{}
}

// arm makes the next Write of sb answer ErrIndeterminate, after writing it if apply.
func (s *outcomeStore) arm(sb string, apply bool) {
	s.mu.Lock()
	s.sandbox, s.apply = sb, apply
	s.mu.Unlock()
}

func (s *outcomeStore) Write(ctx context.Context, b *Batch) error {
	s.mu.Lock()
	hit, apply, held, release := s.sandbox != "" && b.Sandbox == s.sandbox, s.apply, s.held, s.release
	if hit {
		s.sandbox, s.held, s.release = "", nil, nil
	}
	s.mu.Unlock()
	if !hit {
		return s.Storage.Write(ctx, b)
	}
	if held != nil {
		close(held)
		<-release
	}
	if apply {
		if err := s.Storage.Write(ctx, b); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: leadership lost while committing log", ErrIndeterminate)
}

// bothOutcomes runs f as parallel subtests for a write whose outcome is unknown and
// that landed anyway (apply) or never landed.
func bothOutcomes(t *testing.T, f func(t *testing.T, apply bool)) {
	for _, apply := range []bool{true, false} {
		name := "never applied"
		if apply {
			name = "applied anyway"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, apply)
		})
	}
}

func newOutcomeNode(t *testing.T) (*testNode, *outcomeStore) {
	t.Helper()
	var store *outcomeStore
	n := newTestNode(t, func(c *Config) {
		bolt, err := OpenBolt(filepath.Join(c.DataDir, "outcome.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bolt.Close() }) // after the node's close: cleanups are LIFO
		store = &outcomeStore{Storage: bolt}
		c.Storage = store
	})
	return n, store
}

// stored reads what storage holds of sb: whether its record exists, its event types
// in seq order, and its session ids.
func stored(t *testing.T, n *testNode, sb string) (exists bool, events []string, sessions []string) {
	t.Helper()
	err := n.store.Read(tctx(t), sb, func(r Reader) error {
		exists = r.Get(keyMeta) != nil
		r.Scan(pfxEvent, nil, func(_, v []byte) bool {
			var e eventRec
			must(t, json.Unmarshal(v, &e))
			events = append(events, e.Type)
			return true
		})
		r.Scan(pfxSession, nil, func(k, _ []byte) bool {
			sessions = append(sessions, string(k[len(pfxSession):]))
			return true
		})
		return nil
	})
	must(t, err)
	return exists, events, sessions
}

// wantUnknown checks that a write whose commit had an unknown outcome was refused as
// unavailable, naming the unknown outcome.
func wantUnknown(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("%s with an unknown commit outcome: %v, want ErrUnavailable and ErrIndeterminate", what, err)
	}
}

// TestUnknownOutcomeCreate: a create whose commit outcome is unknown is answered
// 503-like; whether or not the batch landed, the sandbox's owner index (which the
// gateway checks before any request reaches the sandbox) follows storage by itself,
// the retry answers what storage holds (exists-identical when it landed, created
// when it did not), and every read after it finds the sandbox, with one
// sandbox.created.
func TestUnknownOutcomeCreate(t *testing.T) {
	t.Parallel()
	bothOutcomes(t, func(t *testing.T, apply bool) {
		n, store := newOutcomeNode(t)
		spec := SandboxSpec{ID: "u1", Labels: map[string]string{"k": "v"}}
		store.arm("u1", apply)
		_, _, err := n.CreateSandbox(tctx(t), spec)
		wantUnknown(t, "create", err)
		// With no request after it, the index still comes to match storage.
		eventually(t, 20*time.Second, "the owner index to follow storage", func() bool {
			_, ok := n.SandboxTenant("u1")
			return ok == apply
		})
		if exists, _, _ := stored(t, n, "u1"); exists != apply {
			t.Fatalf("stored: %v, want %v", exists, apply)
		}

		in, created, err := n.CreateSandbox(tctx(t), spec)
		must(t, err)
		if created == apply {
			t.Fatalf("the retry answered created=%v after a first attempt that applied=%v", created, apply)
		}
		if in.ID != "u1" || in.State != StateRunning {
			t.Fatalf("the retry answered %+v", in)
		}
		checkFound(t, n, "u1")
	})
}

// TestUnknownOutcomeRetryQueued: a retry of the create that waited in the mailbox
// while the first attempt's commit was held, and is served by the activation that
// follows the failed one, answers what storage holds, and the moment it is answered
// the owner index has the sandbox: the index is set by that activation's load, not
// later by the index worker, which defers to an active sandbox.
func TestUnknownOutcomeRetryQueued(t *testing.T) {
	t.Parallel()
	bothOutcomes(t, func(t *testing.T, apply bool) {
		n, store := newOutcomeNode(t)
		spec := SandboxSpec{ID: "q1", Labels: map[string]string{"k": "v"}}
		held, release := make(chan struct{}), make(chan struct{})
		store.mu.Lock()
		store.held, store.release = held, release
		store.mu.Unlock()
		store.arm("q1", apply)
		first := make(chan error, 1)
		go func() {
			_, _, err := n.CreateSandbox(tctx(t), spec)
			first <- err
		}()
		<-held
		type answer struct {
			created bool
			err     error
		}
		retry := make(chan answer, 1)
		go func() {
			_, created, err := n.CreateSandbox(tctx(t), spec)
			retry <- answer{created, err}
		}()
		eventually(t, 20*time.Second, "the retry to queue", func() bool {
			a := n.active("q1")
			return a != nil && len(a.mb) == 1
		})
		close(release)
		wantUnknown(t, "create", <-first)
		r := <-retry
		must(t, r.err)
		if r.created == apply {
			t.Fatalf("the retry answered created=%v after a first attempt that applied=%v", r.created, apply)
		}
		checkFound(t, n, "q1")
	})
}

// checkFound checks that every read of sb after a successful answer finds it: the
// owner index, the tenant's count, a get, the list and storage, with exactly one
// sandbox.created.
func checkFound(t *testing.T, n *testNode, sb string) {
	t.Helper()
	if tenant, ok := n.SandboxTenant(sb); !ok || tenant != DefaultTenant {
		t.Fatalf("owner index after the retry: %q %v, want %q", tenant, ok, DefaultTenant)
	}
	if got := n.TenantSandboxes(DefaultTenant); got != 1 {
		t.Fatalf("the tenant counts %d sandboxes, want 1", got)
	}
	if _, err := n.GetSandbox(tctx(t), sb); err != nil {
		t.Fatalf("get after the retry: %v", err)
	}
	list, err := n.ListSandboxes(tctx(t), nil)
	must(t, err)
	if len(list) != 1 || list[0].ID != sb {
		t.Fatalf("list after the retry: %+v", list)
	}
	exists, events, _ := stored(t, n, sb)
	if !exists || len(events) == 0 || events[0] != "sandbox.created" || countOf(events, "sandbox.created") != 1 {
		t.Fatalf("stored after the retry: exists %v, events %v", exists, events)
	}
}

func countOf(s []string, v string) int {
	c := 0
	for _, x := range s {
		if x == v {
			c++
		}
	}
	return c
}

// TestUnknownOutcomeWrites: an event post, a session create and a delete whose
// commits have an unknown outcome, each applied anyway and never applied. The
// retry's answer and every read after it agree with storage: the event seqs follow
// what is stored with no gap or repeat, the session exists once, the deleted sandbox
// is gone from the owner index, and one that was not deleted after all still
// hibernates on time (its alarm, cleared by the failed delete's turn, is back).
func TestUnknownOutcomeWrites(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, n *testNode, store *outcomeStore, apply bool)
	cases := []struct {
		name string
		run  check
	}{
		{name: "event", run: unknownEvent},
		{name: "session", run: unknownSession},
		{name: "delete", run: unknownDelete},
	}
	for _, c := range cases {
		for _, apply := range []bool{true, false} {
			name := c.name + "/never applied"
			if apply {
				name = c.name + "/applied anyway"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				n, store := newOutcomeNode(t)
				mustCreate(t, n, "w1")
				c.run(t, n, store, apply)
			})
		}
	}
}

func unknownEvent(t *testing.T, n *testNode, store *outcomeStore, apply bool) {
	store.arm("w1", apply)
	_, err := n.PostEvent(tctx(t), "w1", "agent.first", nil)
	wantUnknown(t, "event post", err)
	seq, err := n.PostEvent(tctx(t), "w1", "agent.retry", nil)
	must(t, err)
	evs, err := n.Events(tctx(t), "w1", 0, 100)
	must(t, err)
	_, stEvents, _ := stored(t, n, "w1")
	want := []string{"sandbox.created", "agent.retry"}
	if apply {
		want = []string{"sandbox.created", "agent.first", "agent.retry"}
	}
	if fmt.Sprint(stEvents) != fmt.Sprint(want) || len(evs) != len(want) {
		t.Fatalf("stored events %v, read %d, want %v", stEvents, len(evs), want)
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) || e.Type != want[i] {
			t.Fatalf("event %d read as seq %d %s, want seq %d %s", i, e.Seq, e.Type, i+1, want[i])
		}
	}
	if seq != uint64(len(want)) {
		t.Fatalf("the retry's event got seq %d, want %d", seq, len(want))
	}
}

func unknownSession(t *testing.T, n *testNode, store *outcomeStore, apply bool) {
	store.arm("w1", apply)
	_, _, err := n.CreateSession(tctx(t), "w1", SessionSpec{ID: "s1"})
	wantUnknown(t, "session create", err)
	_, created, err := n.CreateSession(tctx(t), "w1", SessionSpec{ID: "s1"})
	must(t, err)
	if created == apply {
		t.Fatalf("the retry answered created=%v after a first attempt that applied=%v", created, apply)
	}
	list, err := n.ListSessions(tctx(t), "w1")
	must(t, err)
	_, _, sessions := stored(t, n, "w1")
	if len(list) != 1 || list[0].ID != "s1" || fmt.Sprint(sessions) != "[s1]" {
		t.Fatalf("sessions read %+v, stored %v, want s1 once", list, sessions)
	}
}

func unknownDelete(t *testing.T, n *testNode, store *outcomeStore, apply bool) {
	store.arm("w1", apply)
	err := n.DeleteSandbox(tctx(t), "w1")
	wantUnknown(t, "delete", err)
	if apply {
		err = n.DeleteSandbox(tctx(t), "w1")
		wantErr(t, err, ErrNotFound) // it was deleted: the retry finds nothing
		if _, ok := n.SandboxTenant("w1"); ok || n.TenantSandboxes(DefaultTenant) != 0 {
			t.Fatalf("a deleted sandbox is still indexed (%v) or counted (%d)", ok, n.TenantSandboxes(DefaultTenant))
		}
		if exists, _, _ := stored(t, n, "w1"); exists {
			t.Fatal("a deleted sandbox is still stored")
		}
		return
	}
	// Not deleted after all: it is still there, and its alarm still runs (no request
	// but reads comes after the failed delete).
	in, err := n.GetSandbox(tctx(t), "w1")
	must(t, err)
	if _, ok := n.SandboxTenant("w1"); !ok {
		t.Fatal("a sandbox whose delete never landed is not indexed")
	}
	n.clock.Advance(in.Budget.IdleTTL + time.Second)
	eventually(t, 20*time.Second, "the sandbox to hibernate", func() bool {
		in, err := n.GetSandbox(tctx(t), "w1")
		return err == nil && in.State == StateHibernated
	})
	must(t, n.DeleteSandbox(tctx(t), "w1"))
}

// TestHaltedTurnsLeaveIndexesToStorage: a delete whose group is ended unsaved by a
// fence (the turn ran, nothing was written) leaves the sandbox stored, and the
// activation that serves the request queued behind it puts the alarm the delete's
// turn cleared back from storage: the sandbox still hibernates on time.
func TestHaltedTurnsLeaveIndexesToStorage(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	in := mustCreate(t, n, "h1")
	fenced := fmt.Errorf("%w: test fence", ErrUnavailable)
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := call(tctx(t), n.Node, "h1", func(a *sbActor) (int, error) {
			close(started)
			deadline := time.Now().Add(20 * time.Second)
			for len(a.mb) == 0 && time.Now().Before(deadline) { // the get below, queued
				time.Sleep(time.Millisecond)
			}
			if err := a.delete(); err != nil {
				return 0, err
			}
			a.halt(fenced, true) // the queued get goes to a fresh activation
			return 0, nil
		})
		first <- err
	}()
	<-started
	got, err := n.GetSandbox(tctx(t), "h1")
	must(t, err)
	wantErr(t, <-first, fenced)
	if got.State != StateRunning {
		t.Fatalf("the sandbox whose delete was not saved: %+v", got)
	}
	if _, ok := n.SandboxTenant("h1"); !ok {
		t.Fatal("the sandbox whose delete was not saved is not indexed")
	}
	n.clock.Advance(in.Budget.IdleTTL + time.Second)
	eventually(t, 20*time.Second, "the sandbox to hibernate", func() bool {
		in, err := n.GetSandbox(tctx(t), "h1")
		return err == nil && in.State == StateHibernated
	})
}
