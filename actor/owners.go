package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// DefaultTenant owns the sandboxes created without a tenant, and those whose record
// names none (records written before the owner was recorded).
const DefaultTenant = "default"

// owners is the node's in-memory index of which tenant owns each sandbox, and how many
// sandboxes each tenant has. It is loaded from the stored records at Open and changed
// only after the commit that creates or deletes a sandbox, so answering "whose is
// sandbox x?" never activates a passivated sandbox.
//
// A create counts against its tenant's limit from the moment its turn claims a place
// (reserve) until it is confirmed after the commit or abandoned by its caller, so
// concurrent creates of different ids can never pass the limit together.
//
// Concurrency: all methods are safe for concurrent use; each holds mu briefly (the
// lookups of every request, shared).
type owners struct {
	max int // sandboxes per tenant; 0: no limit

	mu    sync.RWMutex // protects following
	byID  map[string]string
	count map[string]int // committed and reserved sandboxes of each tenant
}

// ownerClaim is one create's place in its tenant's count. The create's turn reserves
// it, the create's commit confirms it, and its caller abandons it when the create
// failed or was given up, whichever order they come in (all under owners.mu).
type ownerClaim struct {
	id, tenant string
	reserved   bool // counted by reserve
	confirmed  bool // the sandbox is durable and indexed
	abandoned  bool // the caller has its answer (an error) or has gone
	released   bool // abandon took the place back before the commit confirmed it
}

func newOwners(max int) *owners {
	return &owners{max: max, byID: map[string]string{}, count: map[string]int{}}
}

// load indexes a stored sandbox, at Open.
func (o *owners) load(id, tenant string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.byID[id]; ok {
		return
	}
	o.byID[id] = tenant
	o.count[tenant]++
}

// set indexes sandbox id as tenant's, moving it from another tenant if needed
// (another node created it, or wrote its record).
func (o *owners) set(id, tenant string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	old, ok := o.byID[id]
	if ok && old == tenant {
		return
	}
	if ok {
		if o.count[old]--; o.count[old] <= 0 {
			delete(o.count, old)
		}
	}
	o.byID[id] = tenant
	o.count[tenant]++
}

// owner returns the tenant of sandbox id; ok is false if there is no such sandbox. The
// tenant is "" for a record whose owner could not be read.
func (o *owners) owner(id string) (tenant string, ok bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	tenant, ok = o.byID[id]
	return tenant, ok
}

// sandboxes returns how many sandboxes tenant has, reserved places included.
func (o *owners) sandboxes(tenant string) int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.count[tenant]
}

// reserve takes a place for c's sandbox in its tenant's count, or returns the
// *BudgetError naming the limit. A claim already abandoned is not reserved: its caller
// has gone, so nobody would release the place if the create then failed.
func (o *owners) reserve(c *ownerClaim) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.abandoned {
		return fmt.Errorf("%w: the create of sandbox %q was given up by its caller", ErrUnavailable, c.id)
	}
	if o.max > 0 && o.count[c.tenant] >= o.max {
		return &BudgetError{Budget: "max_sandboxes_per_tenant", Limit: o.max}
	}
	o.count[c.tenant]++
	c.reserved = true
	return nil
}

// confirm indexes c's sandbox once it is durable. If the caller abandoned the claim in
// the meantime (it gave up waiting), the place it released is counted again: the
// sandbox exists.
func (o *owners) confirm(c *ownerClaim) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byID[c.id] = c.tenant
	c.confirmed = true
	if c.released {
		o.count[c.tenant]++
		c.released = false
	}
}

// abandon releases c's place unless its sandbox was confirmed: the create failed (its
// turn's error, a failed commit) or its caller stopped waiting for it.
func (o *owners) abandon(c *ownerClaim) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.abandoned = true
	if c.reserved && !c.confirmed && !c.released {
		o.count[c.tenant]--
		c.released = true
	}
}

// remove forgets sandbox id once its deletion is durable.
func (o *owners) remove(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	tenant, ok := o.byID[id]
	if !ok {
		return
	}
	delete(o.byID, id)
	if o.count[tenant]--; o.count[tenant] <= 0 {
		delete(o.count, tenant)
	}
}

// recordTenant returns the owner named in a stored sandbox record (DefaultTenant when
// it names none), or "" when the record cannot be read: such a sandbox is shown to no
// tenant but to admins, who see every sandbox.
func recordTenant(v []byte) string {
	var r struct {
		Tenant string `json:"tenant"`
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return ""
	}
	return tenantOrDefault(r.Tenant)
}

func tenantOrDefault(t string) string {
	if t == "" {
		return DefaultTenant
	}
	return t
}

// SandboxTenant returns the tenant that owns sandbox id, from memory (it never
// activates a sandbox); ok is false when the node has no such sandbox. A sandbox being
// created is not known until its create is durable, nor a deleted one after its delete
// is. The tenant is "" for a sandbox whose stored records could not be read (a damaged
// storage file): nobody can tell its owner.
func (n *Node) SandboxTenant(id string) (tenant string, ok bool) { return n.owners.owner(id) }

// TenantSandboxes returns how many sandboxes tenant has on this node, creates in
// progress included.
func (n *Node) TenantSandboxes(tenant string) int { return n.owners.sandboxes(tenant) }

// ids returns tenant's sandbox ids, in id order.
func (o *owners) ids(tenant string) []string {
	o.mu.RLock()
	var out []string
	for id, t := range o.byID {
		if t == tenant {
			out = append(out, id)
		}
	}
	o.mu.RUnlock()
	slices.Sort(out)
	return out
}

// ListTenantSandboxes is ListSandboxes for the sandboxes of one tenant: it reads only
// theirs, found in the owner index (see EachTenantSandbox). It does not activate
// anything.
func (n *Node) ListTenantSandboxes(ctx context.Context, tenant string, labels map[string]string) ([]SandboxInfo, error) {
	out := []SandboxInfo{}
	err := n.EachTenantSandbox(ctx, tenant, labels, func(in SandboxInfo) error {
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// hasLabels reports whether have includes every pair in want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
