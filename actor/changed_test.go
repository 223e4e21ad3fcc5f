package actor

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// storedAlarm returns sb's stored alarm time.
func storedAlarm(tb testing.TB, n *testNode, sb string) (at time.Time, ok bool) {
	tb.Helper()
	must(tb, n.store.Read(context.Background(), sb, func(r Reader) error {
		at, ok = decodeAlarm(r.Get(keyAlarm))
		return nil
	}))
	return at, ok
}

// TestSandboxesChanged has node a create, and delete, sandboxes that node b only
// learns of through SandboxesChanged: b's owner index and alarm heap follow, and a
// sandbox active on b is re-read once its activation is gone.
func TestSandboxesChanged(t *testing.T) {
	t.Parallel()
	a, b, _, ownB := twoNodes(t, "ch")
	ctx := tctx(t)
	_, _, err := a.CreateSandbox(ctx, SandboxSpec{ID: "ch", Tenant: "t1"})
	must(t, err)
	sub, err := b.SubscribeEvents(ctx, "ch", 1) // a follower on b, after sandbox.created
	must(t, err)
	defer sub.Close()
	if _, ok := b.SandboxTenant("ch"); ok {
		t.Fatal("b knows a sandbox nobody told it of")
	}
	at, ok := storedAlarm(t, a, "ch")
	if !ok {
		t.Fatal("no stored alarm")
	}
	b.SandboxesChanged([]string{"ch"})
	eventually(t, 10*time.Second, "b indexes ch", func() bool {
		tenant, ok := b.SandboxTenant("ch")
		got, has := b.alarms.at("ch")
		return ok && tenant == "t1" && has && got.Equal(at)
	})
	if got := b.TenantSandboxes("t1"); got != 1 {
		t.Fatalf("b counts %d sandboxes of t1", got)
	}
	if b.ActiveActors() != 0 {
		t.Fatal("re-indexing activated a sandbox")
	}

	// a writes again: the alarm moves (hibernation), an event is posted; b's
	// follower and heap follow.
	a.clock.Advance(at.Sub(a.clock.Now()) + time.Second)
	eventually(t, 10*time.Second, "a hibernates ch", func() bool {
		next, ok := storedAlarm(t, a, "ch")
		return ok && next.After(at)
	})
	next, _ := storedAlarm(t, a, "ch")
	b.SandboxesChanged([]string{"ch"})
	ev, err := sub.Next(ctx)
	must(t, err)
	if ev.Type != "sandbox.hibernated" {
		t.Fatalf("b's follower got %s", ev.Type)
	}
	eventually(t, 10*time.Second, "b's heap follows", func() bool {
		got, ok := b.alarms.at("ch")
		return ok && got.Equal(next)
	})

	must(t, a.DeleteSandbox(ctx, "ch"))
	b.SandboxesChanged([]string{"ch"})
	eventually(t, 10*time.Second, "b forgets ch", func() bool {
		_, ok := b.SandboxTenant("ch")
		_, has := b.alarms.at("ch")
		return !ok && !has && b.TenantSandboxes("t1") == 0
	})

	// A sandbox active on b when told is re-read once it passivated.
	ownB.deny.Store(false)
	_, _, err = a.CreateSandbox(ctx, SandboxSpec{ID: "ch2", Tenant: "t2"})
	must(t, err)
	_, err = b.GetSandbox(ctx, "ch2")
	must(t, err)
	b.SandboxesChanged([]string{"ch2"})
	b.SandboxesChanged([]string{"ch"}) // queued after ch2: once it is done, ch2 was seen
	eventually(t, 10*time.Second, "the queue drained", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		a := b.actors["ch2"]
		return a != nil && a.resync
	})
	if _, ok := b.SandboxTenant("ch2"); ok {
		t.Fatal("re-indexed a sandbox while it was active")
	}
	passivateAll(t, b)
	eventually(t, 10*time.Second, "b indexes ch2 after passivation", func() bool {
		tenant, ok := b.SandboxTenant("ch2")
		return ok && tenant == "t2"
	})
}

// TestAlarmNotOwned fires, on node b, the alarm of a sandbox node a owns: b's
// admission refuses, so b neither activates it nor writes anything (without the
// check, b would hibernate a's sandbox); the alarm stays in b's heap, later.
func TestAlarmNotOwned(t *testing.T) {
	t.Parallel()
	a, b, _, _ := twoNodes(t, "an")
	ctx := tctx(t)
	mustCreate(t, a, "al")
	at, ok := storedAlarm(t, a, "al")
	if !ok {
		t.Fatal("no stored alarm")
	}
	b.SandboxesChanged([]string{"al"})
	eventually(t, 10*time.Second, "b has the alarm", func() bool { _, ok := b.alarms.at("al"); return ok })
	meta := func() []byte {
		var v []byte
		must(t, a.store.Read(ctx, "al", func(r Reader) error { v = bytes.Clone(r.Get(keyMeta)); return nil }))
		return v
	}
	before := meta()

	b.clock.Advance(at.Sub(b.clock.Now()) + time.Second)
	eventually(t, 10*time.Second, "the refused alarm re-armed later", func() bool {
		got, ok := b.alarms.at("al")
		return ok && got.After(at)
	})
	if b.activations.Load() != 0 {
		t.Fatal("b activated a sandbox it does not own for its alarm")
	}
	if got, ok := storedAlarm(t, a, "al"); !ok || !got.Equal(at) {
		t.Fatalf("stored alarm %v %v, want %v", got, ok, at)
	}

	// A refused request does not activate it either.
	_, err := b.GetSandbox(ctx, "al")
	wantErr(t, err, errNotOwner)
	if b.activations.Load() != 0 {
		t.Fatal("a refused request activated the sandbox")
	}
	if got := storedEvents(t, a, "al"); len(got) != 1 || got[0] != "sandbox.created" {
		t.Fatalf("events %v: b wrote", got)
	}
	if !bytes.Equal(meta(), before) {
		t.Fatal("b rewrote the sandbox record of a sandbox it does not own")
	}
}

// TestWithdrawnAdmissionPassivates passivates an activation whose admission was
// withdrawn after it did work: it leaves without saving its in-memory state.
func TestWithdrawnAdmissionPassivates(t *testing.T) {
	t.Parallel()
	var own ownership
	n := newTestNode(t, func(c *Config) { c.NodeID = "withdrawn"; own.config(c) })
	ctx := tctx(t)
	mustCreate(t, n, "wd")
	_, err := n.Exec(ctx, "wd", runtime.ExecOptions{Command: "true"})
	must(t, err)
	var before []byte
	must(t, n.store.Read(ctx, "wd", func(r Reader) error { before = bytes.Clone(r.Get(keyMeta)); return nil }))
	n.clock.Advance(time.Second)
	_, err = n.Exec(ctx, "wd", runtime.ExecOptions{Command: "true"}) // activity: LastActiveAt moves, in memory
	must(t, err)
	own.deny.Store(true)
	passivateAll(t, n)
	var after []byte
	must(t, n.store.Read(ctx, "wd", func(r Reader) error { after = bytes.Clone(r.Get(keyMeta)); return nil }))
	if !bytes.Equal(after, before) {
		t.Fatalf("an activation that may not run the sandbox saved it:\n%s\n%s", before, after)
	}
}
