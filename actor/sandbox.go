package actor

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// SandboxSpec is a create request. ID "" makes a server id ("sb_" + 16 hex).
type SandboxSpec struct {
	ID     string
	Labels map[string]string
	Env    map[string]string
	Cwd    string
	Tenant string
	Pool   map[string]string
}

// SandboxInfo is a sandbox as the API shows it. Its maps are the caller's to keep.
type SandboxInfo struct {
	ID, State, Node string
	Labels          map[string]string
	Pool            map[string]string
	Tenant          string
	CreatedAt       time.Time
	LastActiveAt    time.Time
	Budget          Budget
	Counts          struct{ Processes, Sessions, Terminals int }
	FailReason      string
	// Usage is what the sandbox uses now; nil unless it is active: running (not
	// hibernated, expired or failed) and in memory. A listed active sandbox shows it as
	// of its last turn, its memory and pids up to a second older than that.
	Usage *Usage
}

// infoNow returns the sandbox as the API shows it, its usage read now.
func (a *sbActor) infoNow() SandboxInfo { return a.infoOf(true) }

// infoOf returns the sandbox as the API shows it; with fresh false its memory and pids
// usage may be up to cgroupUsageMaxAge old (usage.go).
func (a *sbActor) infoOf(fresh bool) SandboxInfo {
	r := a.rec
	in := SandboxInfo{
		ID: r.ID, State: r.State, Node: a.n.cfg.NodeID, Labels: maps.Clone(r.Labels), Pool: maps.Clone(r.Pool),
		Tenant: tenantOrDefault(r.Tenant), CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Budget: a.n.recBudget(r.Budget),
		FailReason: r.FailReason,
	}
	in.Counts.Processes, in.Counts.Sessions, in.Counts.Terminals = a.sb.counts(a)
	if r.State == StateRunning {
		// Only a running sandbox is active: a hibernated, expired or failed one runs
		// nothing, and a figure kept from before would read as a live one.
		in.Usage = a.usageNow(fresh)
	}
	return in
}

func (a *sbActor) publishInfo() {
	if a.rec == nil {
		a.info.Store(nil)
		return
	}
	in := a.infoOf(false)
	a.info.Store(&in)
}

// infoFromRec is a passivated sandbox as the API shows it. Its node is the one that
// last ran it (in a cluster, storage holds other nodes' sandboxes too).
func infoFromRec(n *Node, r *sandboxRec) SandboxInfo {
	in := SandboxInfo{
		ID: r.ID, State: r.State, Node: cmp.Or(r.Node, n.cfg.NodeID), Labels: maps.Clone(r.Labels), Pool: maps.Clone(r.Pool),
		Tenant: tenantOrDefault(r.Tenant), CreatedAt: r.CreatedAt, LastActiveAt: r.LastActiveAt, Budget: n.recBudget(r.Budget),
		FailReason: r.FailReason,
	}
	in.Counts.Sessions, in.Counts.Terminals = r.Sessions, r.Terminals
	return in
}

// CreateSandbox creates a sandbox, or returns the existing one with created=false when
// spec.ID exists with identical settings; different settings are ErrConflict. The
// sandbox belongs to spec.Tenant (DefaultTenant if empty): an id another tenant owns is
// ErrConflict saying only that the id is not available, and a tenant already at
// Config.MaxSandboxesPerTenant gets a *BudgetError. The budget comes from
// Config.Policy, its unset fields from Config.Defaults, clamped to Config.Limits. The answer is sent once the sandbox and its
// sandbox.created event are durable.
func (n *Node) CreateSandbox(ctx context.Context, spec SandboxSpec) (info SandboxInfo, created bool, err error) {
	if spec.ID == "" {
		spec.ID = newID("sb_")
	}
	if err := checkID("sandbox", spec.ID); err != nil {
		return SandboxInfo{}, false, err
	}
	spec.Tenant = tenantOrDefault(spec.Tenant)
	type out struct {
		info    SandboxInfo
		created bool
	}
	claim := &ownerClaim{id: spec.ID, tenant: spec.Tenant}
	o, err := call(ctx, n, spec.ID, func(a *sbActor) (out, error) {
		info, created, err := a.create(spec, claim)
		return out{info, created}, err
	})
	if err != nil {
		n.owners.abandon(claim) // a place the turn reserved is not taken after all
	}
	return o.info, o.created, err
}

func (a *sbActor) create(spec SandboxSpec, claim *ownerClaim) (SandboxInfo, bool, error) {
	if a.rec != nil {
		if tenantOrDefault(a.rec.Tenant) != spec.Tenant {
			// Whose it is stays unsaid: a tenant learns no more than that it cannot
			// have this id.
			return SandboxInfo{}, false, fmt.Errorf("%w: sandbox id %q is not available", ErrConflict, a.id)
		}
		spec.Tenant = a.rec.Tenant // "" in a record made before owners were recorded
		if !a.rec.sameSettings(a.n.workspaceDir(a.id), spec) {
			return SandboxInfo{}, false, fmt.Errorf("%w: sandbox %q exists with different settings", ErrConflict, a.id)
		}
		return a.infoNow(), false, nil
	}
	if err := a.n.owners.reserve(claim); err != nil {
		return SandboxInfo{}, false, err
	}
	b, err := a.n.cfg.Policy.Budget(a.ctx(), BudgetRequest{Tenant: spec.Tenant, SandboxID: spec.ID, Labels: maps.Clone(spec.Labels)})
	if err != nil {
		// A policy that fails (a plugin that traps, hangs or answers garbage) gives
		// the operator's defaults: it must not stop sandboxes from being made.
		a.n.log.Warn("actor: the budget policy failed; the sandbox gets the default budget", "sandbox", a.id, "err", err)
		b = Budget{}
	}
	if err := a.clearLeftover(); err != nil {
		return SandboxInfo{}, false, err
	}
	if err := os.MkdirAll(a.n.workspaceDir(a.id), 0o755); err != nil {
		return SandboxInfo{}, false, fmt.Errorf("actor: failed to create workspace: %w", err)
	}
	decided := b.decide(a.n.cfg.Defaults, a.n.cfg.Limits)
	a.rec = &sandboxRec{ID: spec.ID} // for createDisk; set in full below
	err = a.createDisk(decided.DiskBytes)
	if err == nil {
		err = makeCwd(a.n.workspaceDir(a.id), spec.Cwd)
	}
	if err != nil {
		_ = a.dropDisk()
		a.rec = nil
		_ = os.RemoveAll(a.n.workspaceDir(a.id))
		return SandboxInfo{}, false, err
	}
	evBase, msgBase, err := a.n.seqBase.get(a.n.store)
	if err != nil {
		_ = a.dropDisk()
		a.rec = nil
		return SandboxInfo{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	now := a.now()
	a.rec = &sandboxRec{
		ID: spec.ID, Labels: maps.Clone(spec.Labels), Env: maps.Clone(spec.Env), Cwd: spec.Cwd,
		Tenant: spec.Tenant, Pool: maps.Clone(spec.Pool), CreatedAt: now, LastActiveAt: now,
		State: StateRunning, Budget: toBudgetRec(decided), Node: a.n.cfg.NodeID, Files: spec.Cwd != "",
	}
	a.evSeq, a.msgSeq, a.alarmAt, a.savedAlarm = evBase, msgBase, time.Time{}, time.Time{}
	a.msgDirty = nil
	a.resetSizes()
	a.saveRec()
	a.afterCommit(func() { a.n.owners.confirm(claim) })
	labels := spec.Labels
	if labels == nil {
		labels = map[string]string{} // as the sandbox object shows it
	}
	a.emit("sandbox.created", map[string]any{"labels": labels})
	a.rearm()
	a.dirty = true
	return a.infoNow(), true, nil
}

// GetSandbox returns the sandbox (activating it if it was passivated).
func (n *Node) GetSandbox(ctx context.Context, id string) (SandboxInfo, error) {
	if err := checkID("sandbox", id); err != nil {
		return SandboxInfo{}, err
	}
	return call(ctx, n, id, func(a *sbActor) (SandboxInfo, error) {
		if err := a.exists(); err != nil {
			return SandboxInfo{}, err
		}
		return a.infoNow(), nil
	})
}

// ListSandboxes returns the sandboxes whose labels include every pair in labels, in id
// order. Active sandboxes are shown as of their last turn; passivated ones from storage.
// It does not activate anything. It holds the whole list: EachSandbox does not.
func (n *Node) ListSandboxes(ctx context.Context, labels map[string]string) ([]SandboxInfo, error) {
	out := []SandboxInfo{}
	err := n.EachSandbox(ctx, labels, func(in SandboxInfo) error {
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSandbox kills every process tree of the sandbox, removes its storage and,
// once that removal is durable, its workspace and disk image; a delete whose commit
// fails keeps them for the sandbox. Requests queued behind it see the sandbox gone (ErrNotFound); since every
// create is a turn, nothing it started can survive it. Live event followers get a
// final sandbox.deleted event.
func (n *Node) DeleteSandbox(ctx context.Context, id string) error {
	if err := checkID("sandbox", id); err != nil {
		return err
	}
	_, err := call(ctx, n, id, func(a *sbActor) (struct{}, error) { return struct{}{}, a.delete() })
	return err
}

func (a *sbActor) delete() error {
	if err := a.exists(); err != nil {
		return err
	}
	// The final sandbox.deleted (seq evSeq+1) is shown to live followers: a sandbox
	// created again under this id starts after it.
	if err := a.n.seqBase.raise(a.n.store, a.evSeq+1, a.msgSeq); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// The files go only once the delete is durable (workspace_deleted.go): the marker
	// first, so a crash after the commit leaves them findable.
	if err := a.n.markDeleting(a.id); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	a.endWork(false)
	a.unmountDisk()
	a.sb.hasImage = false
	a.sb.forget(a)
	b := a.write()
	b.Ops = nil // everything written earlier in this group is for the deleted sandbox
	b.DeleteSandbox = true
	last := Event{Seq: a.evSeq + 1, Type: "sandbox.deleted", At: a.now(), Data: noData}
	a.rec, a.msgDirty = nil, nil
	a.evSeq, a.msgSeq, a.alarmAt, a.savedAlarm = 0, 0, time.Time{}, time.Time{}
	a.resetSizes()
	a.n.alarms.clear(a.id)
	id := a.id
	a.afterCommit(func() { a.n.owners.remove(id) })
	a.afterCommit(a.afterDelete)
	a.endGroup = true // a create queued behind must not run before the files are gone
	a.afterCommit(func() { a.n.hub.deleted(id, last) })
	if a.msgWake != nil {
		close(a.msgWake)
		a.msgWake = nil
	}
	a.dirty = true
	return nil
}

// makeCwd creates the sandbox's default cwd inside its workspace (confined: a cwd that
// escapes the workspace is ErrInvalid wrapping runtime.ErrEscapes).
func makeCwd(dir, cwd string) error {
	if cwd == "" {
		return nil
	}
	w, err := runtime.OpenWorkspace(dir)
	if err != nil {
		return fmt.Errorf("actor: failed to open workspace: %w", err)
	}
	defer w.Close()
	if err := w.Mkdir(cwd, true); err != nil {
		return fmt.Errorf("%w: sandbox cwd %q: %w", ErrInvalid, cwd, err)
	}
	return nil
}
