package actor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/actor/actortest"
)

// damageSandboxPage damages the leaf page of the data bucket that holds key of sandbox,
// which must hold nothing of any other sandbox, with damage (actortest.DamagePage or
// ScramblePage), and returns its id.
func damageSandboxPage(tb testing.TB, path, sandbox string, key []byte, damage func(string, uint64, int) ([]byte, error)) uint64 {
	tb.Helper()
	leaves, pageSize, err := actortest.BoltLeaves(path, string(bucketData))
	must(tb, err)
	l, ok := actortest.OnlyLeafWith(leaves, dataKey(sandbox, nil), dataKey(sandbox, key))
	if !ok {
		tb.Fatalf("no leaf page holds %q and nothing of other sandboxes", dataKey(sandbox, key))
	}
	_, err = damage(path, l.ID, pageSize)
	must(tb, err)
	return l.ID
}

// bigEvents appends n events of about 2 KiB to sandbox id, so that its records fill
// leaf pages of their own.
func bigEvents(tb testing.TB, n *testNode, id string, count int) {
	tb.Helper()
	data, err := json.Marshal(map[string]string{"pad": strings.Repeat("x", 2000)})
	must(tb, err)
	for range count {
		_, err := n.PostEvent(tctx(tb), id, "agent.pad", data)
		must(tb, err)
	}
}

// lockedBuffer is a log sink safe for the node's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDamagedSandboxIsContained: a damaged page under one sandbox's records neither
// stops the node from opening nor takes other sandboxes down. The check at open finds
// it, logs it and counts it; that sandbox answers ErrCorrupt (an ErrUnavailable) on
// every route, and the others read, write, list and delete as before.
func TestDamagedSandboxIsContained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(path string, id uint64, pageSize int) ([]byte, error)
		detail string
	}{
		{"garbage page", actortest.DamagePage, "Page expected to be"},
		// A page that still looks like a leaf but points past the end of the file: a
		// fault (SIGBUS), turned into a panic by panic-on-fault.
		{"scrambled elements", actortest.ScramblePage, "memory fault"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testDamagedSandbox(t, tc.damage, tc.detail)
		})
	}
}

func testDamagedSandbox(t *testing.T, damage func(string, uint64, int) ([]byte, error), detail string) {
	n := newTestNode(t, nil)
	for _, id := range []string{"a1", "b2", "zz-victim"} { // the victim sorts last
		mustCreate(t, n, id)
		bigEvents(t, n, id, 3)
	}
	bigEvents(t, n, "zz-victim", 20)
	closeNode(t, n)
	path := filepath.Join(n.cfg.DataDir, "actors.db")
	page := damageSandboxPage(t, path, "zz-victim", keyMeta, damage)

	logs := &lockedBuffer{}
	cfg := *n.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	n = reopen(t, &cfg, n.clock)

	if got := n.Stats().UnreadableSandboxes; got != 1 {
		t.Errorf("UnreadableSandboxes = %d after open, want 1", got)
	}
	if l := logs.String(); !strings.Contains(l, "zz-victim") || !strings.Contains(l, detail) || !strings.Contains(l, path) {
		t.Errorf("open logged no line naming the sandbox, the damage (%q) and the file: %s", detail, l)
	}
	if d := n.store.(*BoltStore).Damaged(); len(d) != 1 || d[0].Sandbox != "zz-victim" {
		t.Errorf("Damaged() = %+v, want zz-victim's page %d", d, page)
	}

	ctx := tctx(t)
	victim := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := n.GetSandbox(ctx, "zz-victim"); return err }},
		{"get again", func() error { _, err := n.GetSandbox(ctx, "zz-victim"); return err }},
		{"events", func() error { _, err := n.Events(ctx, "zz-victim", 0, 0); return err }},
		{"post event", func() error { _, err := n.PostEvent(ctx, "zz-victim", "agent.x", nil); return err }},
		{"create over it", func() error { _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "zz-victim"}); return err }},
		{"delete", func() error { return n.DeleteSandbox(ctx, "zz-victim") }},
	}
	activations := n.activations.Load()
	for _, tc := range victim {
		t.Run("victim "+tc.name, func(t *testing.T) {
			err := tc.call()
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrUnavailable) || !errors.As(err, &ce) || ce.Sandbox != "zz-victim" {
				t.Fatalf("err = %v, want a *CorruptError for zz-victim", err)
			}
		})
	}

	if got := n.activations.Load() - activations; got != 0 {
		t.Errorf("%d activations of the known damaged sandbox, want none", got)
	}

	others := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := n.GetSandbox(ctx, "a1"); return err }},
		{"events", func() error {
			evs, err := n.Events(ctx, "b2", 0, 0)
			if err == nil && len(evs) != 4 {
				err = fmt.Errorf("%d events, want 4", len(evs))
			}
			return err
		}},
		{"post event", func() error { _, err := n.PostEvent(ctx, "a1", "agent.x", nil); return err }},
		{"create", func() error { _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: "c3"}); return err }},
		{"list", func() error {
			list, err := n.ListSandboxes(ctx, nil)
			var ids []string
			for _, in := range list {
				ids = append(ids, in.ID)
			}
			if err == nil && fmt.Sprint(ids) != "[a1 b2 c3]" {
				err = fmt.Errorf("listed %v, want [a1 b2 c3]", ids)
			}
			return err
		}},
		{"delete", func() error { return n.DeleteSandbox(ctx, "b2") }},
	}
	for _, tc := range others {
		t.Run("other "+tc.name, func(t *testing.T) { must(t, tc.call()) })
	}
	if got := n.Stats().UnreadableSandboxes; got != 1 {
		t.Errorf("UnreadableSandboxes = %d at the end, want 1", got)
	}
}

// TestDamagedPageInGroupCommit: a batch that walks into a damaged page fails alone with
// ErrCorrupt; another sandbox's batch committed in the same transaction is retried
// alone and succeeds, and the damaged sandbox then fails at once.
func TestDamagedPageInGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := tctx(t)
	path := filepath.Join(t.TempDir(), "actors.db")
	s, err := OpenBolt(path)
	must(t, err)
	pad := bytes.Repeat([]byte("x"), 2000)
	for _, id := range []string{"a1", "zz-victim"} {
		b := &Batch{Sandbox: id}
		b.Put(keyMeta, []byte("{}"))
		for i := range 20 {
			b.Put(seqKey(pfxEvent, uint64(i+1)), pad)
		}
		must(t, s.Write(ctx, b))
	}
	must(t, s.Close())
	leaves, pageSize, err := actortest.BoltLeaves(path, string(bucketData))
	must(t, err)
	s, err = OpenBolt(path)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	victim, ok := actortest.OnlyLeafWith(leaves, dataKey("zz-victim", nil), dataKey("zz-victim", keyMeta))
	if !ok {
		t.Fatal("no leaf page of zz-victim's alone holds its meta key")
	}
	victimPage := victim.ID
	// Damaged while open: the store reads the page from its mapping of the file.
	good, err := actortest.DamagePage(path, victimPage, pageSize)
	must(t, err)

	// Queue the two batches under one hold of the lock: whichever run of the committer
	// takes them takes both, as one group in one transaction.
	group := []*pendingWrite{
		{b: &Batch{Sandbox: "zz-victim", Ops: []Op{{Key: keyMeta, Value: []byte("v")}}}, ch: make(chan struct{})},
		{b: &Batch{Sandbox: "a1", Ops: []Op{{Key: []byte("second"), Value: []byte("v")}}}, ch: make(chan struct{})},
	}
	s.mu.Lock()
	s.pending = append(s.pending, group...)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	for _, w := range group {
		select {
		case <-w.ch:
		case <-ctx.Done():
			t.Fatal("the group was not committed")
		}
	}
	if !errors.Is(group[0].err, ErrCorrupt) {
		t.Errorf("victim's write: %v, want ErrCorrupt", group[0].err)
	}
	if group[1].err != nil {
		t.Errorf("a1's write in the same group: %v", group[1].err)
	}
	must(t, s.Read(ctx, "a1", func(r Reader) error {
		if string(r.Get([]byte("second"))) != "v" {
			return errors.New("a1's write in the damaged group is lost")
		}
		return nil
	}))
	// Known damaged until reopened: even with the page mended, the store does not walk
	// it again.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(good, int64(victimPage)*int64(pageSize))
	must(t, err)
	must(t, f.Close())
	wantErr(t, s.Read(ctx, "zz-victim", func(Reader) error { return nil }), ErrCorrupt)
	wantErr(t, s.Write(ctx, &Batch{Sandbox: "zz-victim", Ops: []Op{{Key: []byte("k")}}}), ErrCorrupt)
	if d := s.Damaged(); len(d) != 1 || d[0].Sandbox != "zz-victim" || !strings.Contains(d[0].Detail, fmt.Sprint(victimPage)) {
		t.Errorf("Damaged() = %+v, want zz-victim at page %d", d, victimPage)
	}
}

// TestDamageSetHammer: marks and lookups from many goroutines at once agree: each
// sandbox is recorded once, and every lookup after its mark returns the same error.
func TestDamageSetHammer(t *testing.T) {
	t.Parallel()
	d := &damageSet{path: "x.db", log: slog.New(slog.DiscardHandler)}
	const workers, ids = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range ids {
				id := fmt.Sprintf("sb%02d", (i+w*7)%ids)
				e := d.mark(id, "detail")
				if got := d.get(id); got != error(e) {
					t.Errorf("get(%s) = %v, want the marked %p", id, got, e)
					return
				}
				_ = d.get("never-marked")
			}
		})
	}
	wg.Wait()
	if len(d.list) != ids || int(d.n.Load()) != ids || len(d.m) != ids {
		t.Errorf("list %d, n %d, map %d; want %d each", len(d.list), d.n.Load(), len(d.m), ids)
	}
	if d.get("never-marked") != nil {
		t.Error("an unmarked sandbox is damaged")
	}
}

// TestDamagedWhileActive: a page under an active sandbox's records is damaged while the
// node runs. Its next write fails with ErrCorrupt (the activation is dropped, as after
// any failed commit), later requests fail at once, and another active sandbox writing
// at the same time is not disturbed.
func TestDamagedWhileActive(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	for _, id := range []string{"a1", "zz-victim"} {
		mustCreate(t, n, id)
	}
	bigEvents(t, n, "zz-victim", 20)
	closeNode(t, n)
	path := filepath.Join(n.cfg.DataDir, "actors.db")
	leaves, pageSize, err := actortest.BoltLeaves(path, string(bucketData))
	must(t, err)
	n = reopen(t, n.cfg, n.clock)
	ctx := tctx(t)
	for _, id := range []string{"a1", "zz-victim"} {
		_, err := n.GetSandbox(ctx, id) // active, its state loaded
		must(t, err)
	}
	damaged := 0
	for _, l := range leaves {
		if _, ok := actortest.OnlyLeafWith([]actortest.Leaf{l}, dataKey("zz-victim", nil), l.Keys[0]); ok {
			_, err := actortest.DamagePage(path, l.ID, pageSize)
			must(t, err)
			damaged++
		}
	}
	if damaged == 0 {
		t.Fatal("no leaf page holds zz-victim's records alone")
	}

	errs := make(chan error, 10)
	for range 5 {
		go func() { _, err := n.PostEvent(ctx, "a1", "agent.x", nil); errs <- err }()
	}
	_, err = n.PostEvent(ctx, "zz-victim", "agent.x", nil)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "failed to save") {
		t.Fatalf("write to the damaged sandbox: %v, want ErrCorrupt from its commit", err)
	}
	for range 5 {
		must(t, <-errs)
	}
	_, err = n.GetSandbox(ctx, "zz-victim")
	wantErr(t, err, ErrCorrupt)
	if got := eventTypes(t, n, "a1"); len(got) != 6 {
		t.Errorf("a1 has events %v, want sandbox.created and 5 agent.x", got)
	}
	if got := n.Stats().UnreadableSandboxes; got != 1 {
		t.Errorf("UnreadableSandboxes = %d, want 1", got)
	}
}

// TestDamageNextDoor: a damaged page that holds only the next sandbox's records is not
// this sandbox's damage, although finding the end of this sandbox's records steps onto
// it: the check at open, scans and lookups of the sandbox before it read on.
func TestDamageNextDoor(t *testing.T) {
	t.Parallel()
	ctx := tctx(t)
	path := filepath.Join(t.TempDir(), "actors.db")
	s, err := OpenBolt(path)
	must(t, err)
	// Records this big go two to a leaf page (bbolt's minimum): a1's two fill one, and
	// b2's first two the next.
	big := bytes.Repeat([]byte("x"), 3000)
	for _, sb := range []struct {
		id   string
		keys []string
	}{{"a1", []string{"c", "e1"}}, {"b2", []string{"c", "e1", "e2", "e3", "e4"}}} {
		b := &Batch{Sandbox: sb.id}
		for _, k := range sb.keys {
			b.Put([]byte(k), big)
		}
		must(t, s.Write(ctx, b))
	}
	must(t, s.Close())
	leaves, pageSize, err := actortest.BoltLeaves(path, string(bucketData))
	must(t, err)
	next, ok := actortest.OnlyLeafWith(leaves, dataKey("b2", nil), dataKey("b2", []byte("c")))
	if !ok || leaves[0].ID == next.ID {
		t.Fatal("b2's first record is not on a page of its own")
	}
	_, err = actortest.DamagePage(path, next.ID, pageSize)
	must(t, err)

	s, err = OpenBolt(path)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	if d := s.Damaged(); len(d) != 1 || d[0].Sandbox != "b2" {
		t.Errorf("Damaged() = %+v, want b2 alone", d)
	}
	must(t, s.Read(ctx, "a1", func(r Reader) error {
		var keys []string
		r.Scan(nil, nil, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
		r.Scan([]byte("e"), nil, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
		r.Scan([]byte("z"), nil, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
		if fmt.Sprint(keys) != "[c e1 e1]" || r.Get([]byte("zz")) != nil || r.Get([]byte("e1")) == nil {
			return fmt.Errorf("a1 reads %v", keys)
		}
		return nil
	}))
	must(t, s.Write(ctx, &Batch{Sandbox: "a1", Ops: []Op{{Key: []byte("e3"), Value: []byte("v")}}}))
	// Deleting a1 walks its keys until the first that is not a1's: onto b2's page.
	must(t, s.Write(ctx, &Batch{Sandbox: "a1", DeleteSandbox: true}))
	must(t, s.Read(ctx, "a1", func(r Reader) error {
		if r.Get([]byte("c")) != nil {
			return errors.New("a1 was not deleted")
		}
		return nil
	}))
	wantErr(t, s.Read(ctx, "b2", func(r Reader) error { r.Get([]byte("c")); return nil }), ErrCorrupt)
	if d := s.Damaged(); len(d) != 1 {
		t.Errorf("Damaged() = %+v, want b2 alone", d)
	}
}
