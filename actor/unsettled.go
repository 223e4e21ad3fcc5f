package actor

// Failed commits and unknown outcomes.
//
// A turn changes the actor's memory at once and storage at the end of its group (the
// output gate). When the group's commit fails, memory is ahead of storage; when the
// store cannot even tell whether the batch was applied (ErrIndeterminate: a cluster
// leader lost while committing it), memory may or may not match storage, and nobody
// on this node knows which yet. The rule is that nothing a failed group produced is
// answered or kept until storage has said what happened:
//
//  1. Every request of the group is answered with the error (ErrUnavailable), and no
//     afterCommit hook runs: the owner index is not confirmed, followers are not
//     woken.
//  2. The activation is dropped (crash) before those answers go out, so a retry meets
//     a fresh activation, which loads from storage. A store whose write outcome was
//     unknown settles it before that Read answers (see Storage), so the load shows
//     whether the batch landed, and every later read agrees with it. A retried create
//     whose first attempt did land finds the durable record and answers "exists,
//     identical"; one whose first attempt did not land creates it again.
//  3. What the node keeps outside the activation, the owner index (SandboxTenant,
//     which the gateway checks before it lets any request reach the sandbox) and the
//     alarm heap, may have been changed by the failed turns (rearm, delete) or was to
//     be changed after the commit (create's confirm, delete's remove). The node marks
//     the sandbox unsettled: the next activation sets both from what it loaded, and
//     if none comes, the index worker re-reads them from storage once the dropped
//     activation has left (changed.go). Without this, a create that landed despite an
//     unknown outcome was answered 2xx by its retry yet stayed out of the owner index,
//     so the next request was 404 until the activation passivated.
//
// A group ended unsaved by a fence or a release (haltStop, fence.go) is the same case
// without a write: its turns ran, nothing of them is stored, and the sandbox is marked
// unsettled too.
//
// The actor never retries a failed batch itself: replayed after later writes it could
// undo them, and a reload from storage is right whatever happened.

// unsettle marks sandbox a.id after a failed commit of activation a: its indexes are
// re-read from storage by the next activation (settleIndexes) or, if none comes, by
// the index worker once a has left the registry.
func (n *Node) unsettle(a *sbActor) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unsettled[a.id] = struct{}{}
	if n.actors[a.id] == a {
		a.resync = true // forget queues the re-read
		return
	}
	n.changes.add(a.id)
}

// settleIndexes makes the owner index and the alarm heap match what load read, if a
// commit of the sandbox failed since they were last read from storage. It runs in
// load, before any turn, while this activation is the sandbox's only writer here.
func (a *sbActor) settleIndexes() {
	n := a.n
	n.mu.Lock()
	_, ok := n.unsettled[a.id]
	delete(n.unsettled, a.id)
	n.mu.Unlock()
	if !ok {
		return
	}
	if a.rec == nil {
		n.owners.remove(a.id)
		n.alarms.clear(a.id)
		return
	}
	n.owners.set(a.id, tenantOrDefault(a.rec.Tenant))
	if a.alarmAt.IsZero() {
		n.alarms.clear(a.id)
	} else {
		n.alarms.set(a.id, a.alarmAt)
	}
}

// settledLocked forgets id's mark once the index worker has read its indexes from
// storage with no activation here. Node.mu must be held.
func (n *Node) settledLocked(id string) { delete(n.unsettled, id) }
