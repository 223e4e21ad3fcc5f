package actor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSandboxTenantIndex: the owner index follows creates and deletes once they are
// durable, is rebuilt from storage at Open (a record without a tenant belongs to
// DefaultTenant), and never activates a passivated sandbox to answer.
func TestSandboxTenantIndex(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	for _, c := range []struct{ id, tenant string }{{"a1", "acme"}, {"a2", "acme"}, {"g1", "globex"}, {"d1", ""}} {
		_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: c.id, Tenant: c.tenant})
		must(t, err)
	}
	// A record from before owners were recorded: no "tenant" key at all.
	must(t, n.store.Write(ctx, &Batch{Sandbox: "old", Ops: []Op{{Key: keyMeta, Value: []byte(`{"id":"old","state":"running","budget":{}}`)}}}))
	must(t, n.DeleteSandbox(ctx, "a2"))
	passivateAll(t, n)

	check := func(n *testNode, when string) {
		t.Helper()
		tests := []struct {
			id, tenant string
			ok         bool
		}{
			{"a1", "acme", true}, {"a2", "", false}, {"g1", "globex", true}, {"d1", DefaultTenant, true},
			{"nosuch", "", false},
		}
		for _, tt := range tests {
			if got, ok := n.SandboxTenant(tt.id); got != tt.tenant || ok != tt.ok {
				t.Fatalf("%s: SandboxTenant(%q) = %q, %v; want %q, %v", when, tt.id, got, ok, tt.tenant, tt.ok)
			}
		}
		for tenant, want := range map[string]int{"acme": 1, "globex": 1, "nobody": 0} {
			if got := n.TenantSandboxes(tenant); got != want {
				t.Fatalf("%s: TenantSandboxes(%q) = %d, want %d", when, tenant, got, want)
			}
		}
		if n.ActiveActors() != 0 {
			t.Fatalf("%s: asking for owners activated %d sandboxes", when, n.ActiveActors())
		}
	}
	if _, ok := n.SandboxTenant("old"); ok {
		t.Fatal("a record written behind the node's back is indexed before a restart")
	}
	check(n, "before restart")
	closeNode(t, n)
	n2 := reopen(t, n.cfg, n.clock)
	check(n2, "after restart")
	if got, _ := n2.SandboxTenant("old"); got != DefaultTenant {
		t.Fatalf("a record without a tenant belongs to %q", got)
	}
	if got := n2.TenantSandboxes(DefaultTenant); got != 2 {
		t.Fatalf("default has %d sandboxes, want 2", got)
	}
	// The old record's sandbox is DefaultTenant's for creates too.
	in, created, err := n2.CreateSandbox(tctx(t), SandboxSpec{ID: "old"})
	must(t, err)
	if created || in.Tenant != DefaultTenant {
		t.Fatalf("re-create of the old sandbox: created %v, tenant %q", created, in.Tenant)
	}
	_, _, err = n2.CreateSandbox(tctx(t), SandboxSpec{ID: "old", Tenant: "acme"})
	wantErr(t, err, ErrConflict)
}

// TestCreateForeignID: an id another tenant owns is ErrConflict that says only that
// the id is not available, even with identical settings.
func TestCreateForeignID(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	spec := SandboxSpec{ID: "x", Tenant: "globex", Labels: map[string]string{"a": "b"}}
	_, _, err := n.CreateSandbox(tctx(t), spec)
	must(t, err)
	spec.Tenant = "acme"
	_, _, err = n.CreateSandbox(tctx(t), spec)
	wantErr(t, err, ErrConflict)
	if msg := err.Error(); !strings.Contains(msg, `sandbox id "x" is not available`) || strings.Contains(msg, "globex") {
		t.Fatalf("message %q", msg)
	}
	if got := n.TenantSandboxes("acme"); got != 0 {
		t.Fatalf("a refused create counted: %d", got)
	}
}

// TestMaxSandboxesPerTenantHammer: concurrent creates of different ids by one tenant
// never pass the limit together, and the count stays exact through deletes.
func TestMaxSandboxesPerTenantHammer(t *testing.T) {
	t.Parallel()
	const max, tries = 5, 40
	n := newTestNode(t, func(c *Config) { c.MaxSandboxesPerTenant = max })
	for round := range 3 {
		var created atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, tries)
		for i := range tries {
			wg.Go(func() {
				_, ok, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: fmt.Sprintf("r%d-%d", round, i), Tenant: "acme"})
				var be *BudgetError
				switch {
				case err == nil && ok:
					created.Add(1)
				case errors.As(err, &be):
					if be.Budget != "max_sandboxes_per_tenant" || be.Limit != max {
						errs <- fmt.Errorf("budget error %+v", be)
					}
				default:
					errs <- fmt.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if created.Load() != max || n.TenantSandboxes("acme") != max {
			t.Fatalf("round %d: %d created, %d counted, want %d", round, created.Load(), n.TenantSandboxes("acme"), max)
		}
		// Another tenant is not held back by acme's count.
		_, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: fmt.Sprintf("g%d", round), Tenant: "globex"})
		must(t, err)
		list, err := n.ListSandboxes(tctx(t), nil)
		must(t, err)
		for _, sb := range list {
			if sb.Tenant == "acme" {
				must(t, n.DeleteSandbox(tctx(t), sb.ID))
			}
		}
		if got := n.TenantSandboxes("acme"); got != 0 {
			t.Fatalf("round %d: %d left after deleting all", round, got)
		}
	}
}

// failingStore fails every write while fail is set.
type failingStore struct {
	Storage
	fail atomic.Bool
}

func (s *failingStore) Write(ctx context.Context, b *Batch) error {
	if s.fail.Load() {
		return errors.New("disk on fire")
	}
	return s.Storage.Write(ctx, b)
}

// TestFailedCreateFreesItsPlace: a create whose commit fails does not keep its place
// in the tenant's count, nor show up in the index.
func TestFailedCreateFreesItsPlace(t *testing.T) {
	t.Parallel()
	var store *failingStore
	n := newTestNode(t, func(c *Config) {
		bolt, err := OpenBolt(filepath.Join(c.DataDir, "failing.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bolt.Close() })
		store = &failingStore{Storage: bolt}
		c.Storage = store
		c.MaxSandboxesPerTenant = 1
	})
	store.fail.Store(true)
	_, _, err := n.CreateSandbox(tctx(t), SandboxSpec{ID: "f1", Tenant: "acme"})
	wantErr(t, err, ErrUnavailable)
	if _, ok := n.SandboxTenant("f1"); ok || n.TenantSandboxes("acme") != 0 {
		t.Fatalf("a create that failed to commit is indexed (%v) or counted (%d)", ok, n.TenantSandboxes("acme"))
	}
	store.fail.Store(false)
	_, _, err = n.CreateSandbox(tctx(t), SandboxSpec{ID: "f2", Tenant: "acme"})
	must(t, err)
}

// TestOwnerClaimOrders: whatever order a create's reserve, commit (confirm) and its
// caller's abandon come in, the count ends right.
func TestOwnerClaimOrders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		steps   string // r: reserve, c: confirm, a: abandon
		count   int
		indexed bool
	}{
		{"created", "rc", 1, true},
		{"created, then the caller's ctx ended", "rca", 1, true},
		{"caller gave up before the commit", "rac", 1, true},
		{"turn or commit failed", "ra", 0, false},
		{"caller gave up before the turn", "ar", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newOwners(0)
			c := &ownerClaim{id: "x", tenant: "acme"}
		steps:
			for _, step := range tt.steps {
				switch step {
				case 'r':
					if err := o.reserve(c); err != nil {
						if !c.abandoned {
							t.Fatal(err)
						}
						break steps // the turn refuses: its create fails
					}
				case 'c':
					o.confirm(c)
				case 'a':
					o.abandon(c)
				}
			}
			if _, ok := o.owner("x"); o.sandboxes("acme") != tt.count || ok != tt.indexed {
				t.Fatalf("count %d indexed %v, want %d %v", o.sandboxes("acme"), ok, tt.count, tt.indexed)
			}
		})
	}
}

// TestListTenantSandboxes: a tenant's list from the owner index matches the full list
// filtered to that tenant, for active and passivated sandboxes, with label filters.
func TestListTenantSandboxes(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	for _, c := range []struct{ id, tenant, team string }{{"a1", "acme", "x"}, {"a2", "acme", "y"}, {"a3", "acme", "x"}, {"g1", "globex", "x"}} {
		_, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: c.id, Tenant: c.tenant, Labels: map[string]string{"team": c.team}})
		must(t, err)
	}
	passivateAll(t, n)
	_, err := n.GetSandbox(ctx, "a3") // one active, the others passivated
	must(t, err)
	must(t, n.DeleteSandbox(ctx, "a2"))
	tests := []struct {
		name, tenant string
		labels       map[string]string
	}{
		{"all of acme's", "acme", nil},
		{"by label", "acme", map[string]string{"team": "x"}},
		{"no match", "acme", map[string]string{"team": "z"}},
		{"another tenant", "globex", nil},
		{"a tenant with none", "nobody", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := n.ListTenantSandboxes(ctx, tt.tenant, tt.labels)
			must(t, err)
			all, err := n.ListSandboxes(ctx, tt.labels)
			must(t, err)
			var want []string
			for _, sb := range all {
				if sb.Tenant == tt.tenant {
					want = append(want, sb.ID)
				}
			}
			var ids []string
			for _, sb := range got {
				if sb.Tenant != tt.tenant {
					t.Fatalf("listed %s of tenant %q", sb.ID, sb.Tenant)
				}
				ids = append(ids, sb.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) || got == nil {
				t.Fatalf("listed %v, want %v", ids, want)
			}
		})
	}
}
