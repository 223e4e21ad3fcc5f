package actor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// Fencing: activations that must end without writing (docs/design.md, "Fencing").
//
// An activation may act for its sandbox only while three things hold: nobody asked it
// to stop (Node.Fence, Node.Release), the sandbox's owner epoch (Config.Epoch) is the
// one it was loaded at, and Config.Admission admits it. When one fails, what it holds
// in memory may be stale (another node may have written since) and anything it wrote
// might land over a new owner's state, so it is halted:
//
//  1. halt marks it (first reason wins), closes its mailbox to new requests and, when
//     asked from outside (Fence, Release), starts killing its runtime at once, on a
//     goroutine of the node, without waiting for the actor's current turn.
//  2. The actor's goroutine (or an inline turn) sees the mark before its next group
//     or before committing the current one, drops the group's writes, and ends the
//     activation with haltStop: every process tree is killed (the runtime's close,
//     which with cgroups gets setsid descendants too), nothing is written, no process.exited is
//     recorded. The running records stay in storage, so the next activation, here or
//     on another node, records those processes as lost (moved.go).
//  3. Requests are answered: after a fence or a refused admission with
//     ErrUnavailable; after an epoch change or a Release, user requests whose turn did
//     not run are handed to a fresh activation loaded from storage, which admits them
//     or refuses them on its own terms. A sandbox that admission refuses is not
//     activated at all (Node.actorFor).
//  4. The node re-reads the sandbox's owner and alarm records once the activation is
//     gone (changed.go), so its indexes match storage again.
//
// A commit already under way when Fence is called may still complete: the store's
// epoch check is what refuses it if the sandbox has a new owner.

// haltState is why an activation is being halted. Guarded by sbActor.mu.
type haltState struct {
	err    error // the answer for requests that are not handed on
	resend bool  // hand user requests whose turn did not run to a fresh activation
}

// Fence stops every activation of the node at once, for a node that lost its lease and
// must not run any sandbox from now on: each one's processes are killed (process
// trees; where cgroups contain them, setsid descendants too), nothing more is written to storage (a write
// would be refused, and a new owner may be writing already), and queued requests fail
// with ErrUnavailable, saying reason. It returns without waiting for the kills, which
// finish on goroutines the node waits for at Close. The node stays usable: later
// requests activate sandboxes again from storage once Config.Admission lets them.
// Safe for concurrent use; it never blocks on an actor. (Extension.)
func (n *Node) Fence(reason string) {
	err := fmt.Errorf("%w: node fenced: %s", ErrUnavailable, reason)
	for _, a := range n.activeActors() {
		a.haltFromOutside(err, false)
	}
}

// Release ends the activations of the sandboxes ids as Fence does, for sandboxes the
// cluster table has given to another node: processes killed, nothing written. Queued
// requests are handed to a fresh activation, which Config.Admission then refuses (or
// admits, if the table gave the sandbox back). Sandboxes that are not active here are
// ignored. It does not wait. (Extension.)
func (n *Node) Release(ids []string) {
	for _, id := range ids {
		if a := n.active(id); a != nil {
			a.haltFromOutside(fmt.Errorf("%w: sandbox %q was moved to another node", ErrUnavailable, id), true)
		}
	}
}

func (n *Node) activeActors() []*sbActor {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Collect(maps.Values(n.actors))
}

// haltFromOutside is halt called by another goroutine than the actor's: it also kills
// the runtime now, since the actor may be in the middle of a turn.
func (a *sbActor) haltFromOutside(err error, resend bool) {
	a.halt(err, resend)
	if rt := a.live.Load(); rt != nil {
		a.n.killAsync(rt)
	}
	a.signal()
}

// ended reports whether the activation is ending in a way that kills its work: a
// fence or Release (halt), a planned move (Deactivate), the node closing, or any stop.
// Work that ran off the actor and comes back after it was set may have been killed
// by that end rather than have finished on its own, so its outcome is unknown. The
// flag is set before the kill, which may come from outside the actor's goroutine
// (haltFromOutside) or in a turn long before stopped closes (Deactivate kills, then
// commits).
func (a *sbActor) ended() bool { return a.ending.Load() }

// halt marks the activation to end without writing; the first reason wins.
func (a *sbActor) halt(err error, resend bool) {
	a.mu.Lock()
	if a.haltWhy.err == nil {
		a.haltWhy = haltState{err: err, resend: resend}
	}
	a.closed = true
	a.mu.Unlock()
	a.ending.Store(true)
	a.halted.Store(true)
}

// killAsync closes rt (every process tree killed after KillGrace) on a goroutine the
// node waits for at Close. After Close started, the actors end their runtimes.
func (n *Node) killAsync(rt *runtime.Sandbox) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.wg.Add(1) // under mu with closed unset: Close has not started waiting
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.KillGrace+10*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			n.log.Error("actor: failed to kill a fenced sandbox's processes", "err", err)
		}
	}()
}

// mayWrite returns why the activation may not act for its sandbox now, or nil.
func (a *sbActor) mayWrite() error {
	if a.halted.Load() {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.haltWhy.err
	}
	if e := a.n.epoch(a.id); e != a.epoch {
		return fmt.Errorf("%w: sandbox %q owner epoch moved from %d to %d", ErrUnavailable, a.id, a.epoch, e)
	}
	if adm := a.n.cfg.Admission; adm != nil {
		if err := adm(a.id); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return nil
}

// admitGroup runs before a group's turns. It reports false, having ended the
// activation and answered reqs, when the activation was halted, its sandbox's owner
// epoch moved (its memory may be stale: the requests go to a fresh activation), or
// admission refuses: the node may not run the sandbox now (its lease ran out, or the
// table gave the sandbox away), so the activation must neither write nor keep
// processes running, and lingering would only hold memory. Admission is asked once
// here for the group's first turn; group asks again before each later user turn.
func (a *sbActor) admitGroup(reqs []*request) bool {
	if a.halted.Load() {
		a.haltStop(reqs, false)
		return false
	}
	if e := a.n.epoch(a.id); e != a.epoch {
		a.halt(fmt.Errorf("%w: sandbox %q owner epoch moved from %d to %d", ErrUnavailable, a.id, a.epoch, e), true)
		a.haltStop(reqs, false)
		return false
	}
	if adm := a.n.cfg.Admission; adm != nil {
		if err := adm(a.id); err != nil {
			a.halt(fmt.Errorf("%w: %w", ErrUnavailable, err), false)
			a.haltStop(reqs, false)
			return false
		}
	}
	return true
}

// haltStop ends a halted activation without writing. ran says reqs' turns have run:
// their effects are dropped, so they are answered with the halt's error rather than
// run again elsewhere.
func (a *sbActor) haltStop(reqs []*request, ran bool) {
	a.mu.Lock()
	h := a.haltWhy
	a.mu.Unlock()
	a.batch, a.afterHook = nil, nil
	if len(a.sb.procs) > 0 || len(a.sb.running) > 0 {
		a.n.noteHalted(a.id) // their exits are recorded as owner_lost (moved.go)
	}
	var again []*request
	for _, r := range reqs {
		switch {
		case h.resend && !ran && r.ctx != nil:
			again = append(again, r)
		case r.done != nil:
			r.done <- result{err: h.err}
		}
	}
	if h.resend {
		for len(a.mb) > 0 {
			again = append(again, <-a.mb)
		}
	}
	if ran { // the turns may have changed the node's indexes of the sandbox (unsettled.go)
		a.n.unsettle(a)
	}
	a.n.log.Info("actor: ending activation without saving", "sandbox", a.id, "why", h.err)
	a.stop(h.err)
	a.n.changes.add(a.id) // its indexes follow storage again once it is gone
	for _, r := range again {
		a.n.resend(a.id, r)
	}
}

// setRuntime records the sandbox's runtime, published for Fence.
func (a *sbActor) setRuntime(rt *runtime.Sandbox) {
	a.sb.rt = rt
	a.live.Store(rt)
}
