package gateway

import (
	"context"
	"net/http"

	"github.com/sandgate/sandgate/actor"
)

// DefaultTenant is the tenant of the --token token (and of the token the server makes
// on a loopback address): an admin of tenant "default". Sandboxes stored without a
// tenant belong to it too.
const DefaultTenant = actor.DefaultTenant

// Principal is who a token speaks for. A tenant sees and touches only the sandboxes it
// created; any other sandbox is 404, exactly as if it did not exist, on every route,
// stream and list. An admin sees every sandbox, alone may change cluster membership,
// and owns (as its Tenant) the sandboxes it creates.
type Principal struct {
	// Tenant names the tenant: non-empty, handed to policy plugins and logged.
	Tenant string
	// Admin marks an operator token.
	Admin bool
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalOf returns who the request's token speaks for (the zero Principal on a
// public route).
func principalOf(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// tenantOf returns the tenant that the request's token belongs to.
func tenantOf(ctx context.Context) string { return principalOf(ctx).Tenant }

// sees reports whether p may see a sandbox owned by tenant owner. An owner of "" is a
// sandbox whose stored records cannot be read: every token reaches it and is told it
// is unavailable (503), which its real owner needs to know, at the price of telling
// other tenants that the id exists.
func (p Principal) sees(owner string) bool { return p.Admin || owner == "" || owner == p.Tenant }

// checkSandboxAccess is the one tenancy check of every route with a {sb}, run by
// serveRoute: a sandbox that does not exist, and one that belongs to another tenant,
// are the same 404 with the same message. Only the path's ids are checked before it (a
// malformed id is 400 whoever owns the sandbox); the body, the query and the policy
// come after, so no answer tells the two apart. It reads the actor node's in-memory
// owner index: a passivated sandbox is not activated to learn its owner.
func (s *Server) checkSandboxAccess(r *http.Request, sb string) error {
	owner, ok := s.node.SandboxTenant(sb)
	if !ok || !principalOf(r.Context()).sees(owner) {
		return &actor.NotFoundError{What: "sandbox", ID: sb}
	}
	return nil
}

// requireAdmin refuses a request whose token is not an admin's with 403 forbidden.
func requireAdmin(r *http.Request, what string) error {
	if principalOf(r.Context()).Admin {
		return nil
	}
	return errorf(http.StatusForbidden, codeForbidden, "only an admin token may %s", what)
}

type whoamiJSON struct {
	Tenant    string `json:"tenant"`
	Admin     bool   `json:"admin"`
	Sandboxes int    `json:"sandboxes"`
	Max       int    `json:"max_sandboxes"`
}

// whoami tells the caller which tenant its token speaks for, whether it is an admin,
// and how many sandboxes the tenant has of how many it may (0: no limit).
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r.Context())
	writeJSON(w, http.StatusOK, whoamiJSON{
		Tenant: p.Tenant, Admin: p.Admin,
		Sandboxes: s.node.TenantSandboxes(p.Tenant), Max: s.maxPerTenant(),
	})
	return nil
}

// DefaultMaxSandboxesPerTenant is Config.MaxSandboxesPerTenant's default.
const DefaultMaxSandboxesPerTenant = 1000

// maxPerTenant is the per-tenant sandbox limit in force; 0 means none.
func (s *Server) maxPerTenant() int { return max(s.cfg.MaxSandboxesPerTenant, 0) }
