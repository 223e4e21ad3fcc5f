package gateway

import (
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/actor"
)

type createSandboxRequest struct {
	ID     *string           `json:"id"`
	Labels map[string]string `json:"labels"`
	Env    map[string]string `json:"env"`
	Cwd    string            `json:"cwd"`
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) (err error) {
	var req createSandboxRequest
	if err := decodeJSON(r, maxJSONBody, &req); err != nil {
		return err
	}
	id, err := optionalID("sandbox", req.ID)
	if err != nil {
		return err
	}
	// A create placed here by a pool that fails (the policy denies it here, the
	// activation fails, the client is gone) leaves no pin behind (cluster_pins.go).
	defer func() {
		if err != nil || r.Context().Err() != nil {
			s.unpinHere(id)
		}
	}()
	if err := validateEnv(req.Env); err != nil {
		return err
	}
	if err := validateLabels(req.Labels); err != nil {
		return err
	}
	if err := checkPaths("cwd", req.Cwd); err != nil {
		return err
	}
	if id == "" {
		// The accepting node's (createTarget), or made here, not by the actor, so
		// that the policy is told the id as on every other route.
		if id = madeID(r); id == "" {
			id = newSandboxID()
		}
		req.ID = &id
	}
	pool, err := s.decideRouteFor(r, r.Method, "POST /v1/sandboxes", id, nonNilMap(req.Labels), nil)
	if err != nil {
		return err
	}
	if len(pool) > 0 && !labelsMatch(s.cfg.Labels, pool) && !s.hasSandbox(r, id) {
		return s.createInPool(w, r, req, id, pool)
	}
	return s.createHere(w, r, req, id, pool)
}

// createHere creates the sandbox on this node.
func (s *Server) createHere(w http.ResponseWriter, r *http.Request, req createSandboxRequest, id string, pool map[string]string) error {
	info, created, err := s.node.CreateSandbox(r.Context(), actor.SandboxSpec{
		ID: id, Labels: req.Labels, Env: req.Env, Cwd: req.Cwd,
		Tenant: tenantOf(r.Context()), Pool: pool,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.renderOwned(info))
	return nil
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	filter := map[string]string{}
	for _, l := range r.URL.Query()["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return badRequest("label filter must be key=value, not %q", l)
		}
		filter[k] = v
	}
	// A tenant's list reads only its own sandboxes (from the owner index); an admin's
	// reads every one.
	// The answer is written as the sandboxes are read, never held whole
	// (list_stream.go).
	who := principalOf(r.Context())
	l := newJSONList(w, "sandboxes")
	each := func(i actor.SandboxInfo) error {
		if !who.sees(i.Tenant) { // another tenant's sandboxes are not there for this token
			return nil
		}
		return l.add(s.renderOwned(i))
	}
	var err error
	if who.Admin {
		err = s.node.EachSandbox(r.Context(), filter, each)
	} else {
		err = s.node.EachTenantSandbox(r.Context(), who.Tenant, filter, each)
	}
	if err != nil {
		return s.listFailed(r, l, err)
	}
	l.end()
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) error {
	info, err := s.node.GetSandbox(r.Context(), r.PathValue("sb"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.renderOwned(info))
	return nil
}

// renderOwned renders a sandbox with, as its node, the member that owns it in the
// cluster's table (where any node forwards its requests), or the node in its record
// when the table gives it no owner right now.
func (s *Server) renderOwned(i actor.SandboxInfo) sandboxJSON {
	j := renderSandbox(i)
	if owner, _, ok := s.cluster.Owner(i.ID); ok {
		j.Node = string(owner)
	}
	return j
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	if err := s.node.DeleteSandbox(r.Context(), r.PathValue("sb")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// validateLabels refuses label keys that the ?label=k=v filter could never match, and
// a NUL byte in a key or value, as in every other string the API takes (labels go to
// policy plugins too).
func validateLabels(labels map[string]string) error {
	for k, v := range labels {
		if k == "" || strings.Contains(k, "=") {
			return badRequest("invalid label key %q: it must be non-empty, without \"=\"", k)
		}
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return badRequest("label %q holds a NUL byte", k)
		}
	}
	return checkLabels(labels)
}

// validateEnv rejects variable names a process environment cannot hold, and an env
// past the bounds (limits.go).
func validateEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return badRequest("invalid environment variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return badRequest("environment variable %q contains a NUL byte", k)
		}
	}
	return checkEnvSize(env)
}
