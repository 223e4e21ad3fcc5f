package actor

import (
	"context"
	"sync"
	"time"
)

// Indexes that follow other nodes' writes.
//
// A node keeps two indexes of every stored sandbox in memory: its owner tenant
// (owners.go) and its alarm time (alarm.go). Its own actors keep them current after
// their commits. With a replicated store, other nodes write too; the store tells the
// node which sandboxes they wrote (Node.SandboxesChanged), and a goroutine of the node
// re-reads those sandboxes' owner and alarm records and updates both indexes.
//
// A sandbox active here is left to its actor, and so is one whose activation started
// while its records were being read (the read may predate the actor's commits): it is
// read again once the activation has left the registry. So the indexes are updated
// from storage only while nobody here can be changing that sandbox.

// changeQueue holds the sandboxes whose indexes are to be re-read, each once however
// often it is added. Safe for concurrent use.
type changeQueue struct {
	mu      sync.Mutex // protects following
	pending map[string]struct{}
	wake    chan struct{} // cap 1: something is pending
}

func newChangeQueue() *changeQueue {
	return &changeQueue{pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

// add queues ids and wakes the worker; it never blocks.
func (q *changeQueue) add(ids ...string) {
	if len(ids) == 0 {
		return
	}
	q.mu.Lock()
	for _, id := range ids {
		q.pending[id] = struct{}{}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns and clears what is pending.
func (q *changeQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := make([]string, 0, len(q.pending))
	for id := range q.pending {
		ids = append(ids, id)
	}
	clear(q.pending)
	return ids
}

// SandboxesChanged tells the node that another node wrote the records of sandboxes
// ids (created, changed or deleted them). It wakes their event followers here
// (SubscribeEvents), which read the new events from storage, queues the rest and
// returns at once: a goroutine of the node re-reads each one's owner and alarm and
// updates the owner index (SandboxTenant, TenantSandboxes, ListTenantSandboxes) and
// the alarm heap. A sandbox active on this node is re-read once its activation is
// gone. Safe for concurrent use. (Extension.)
func (n *Node) SandboxesChanged(ids []string) {
	for _, id := range ids {
		n.hub.notify(id)
	}
	n.changes.add(ids...)
}

// runChanges is the goroutine that applies SandboxesChanged until the node closes.
func (n *Node) runChanges() {
	defer n.wg.Done()
	for {
		select {
		case <-n.closing:
			return
		case <-n.changes.wake:
		}
		for _, id := range n.changes.take() {
			select {
			case <-n.closing:
				return
			default:
			}
			n.syncIndexes(id)
		}
	}
}

// storedIndexes is what the indexes hold of one sandbox, as read from storage.
type storedIndexes struct {
	exists bool
	tenant string
	alarm  time.Time // zero: none
}

// syncIndexes makes the owner index and the alarm heap match sandbox id's stored
// records, unless an activation here has it (see the comment at the top).
func (n *Node) syncIndexes(id string) {
	n.mu.Lock()
	if a := n.actors[id]; a != nil {
		a.resync = true // forget re-queues it
		n.mu.Unlock()
		return
	}
	n.syncing[id] = false
	n.mu.Unlock()

	var st storedIndexes
	var aside []string // a deleted sandbox's files, moved aside under n.mu: removed after it
	defer func() { n.removeSettled(id, aside) }()
	err := n.store.Read(context.Background(), id, func(r Reader) error {
		if m := r.Get(keyMeta); m != nil {
			st.exists, st.tenant = true, recordTenant(m)
		}
		st.alarm, _ = decodeAlarm(r.Get(keyAlarm))
		return nil
	})

	n.mu.Lock()
	defer n.mu.Unlock()
	raced := n.syncing[id]
	delete(n.syncing, id)
	switch a := n.actors[id]; {
	case a != nil:
		a.resync = true
		return
	case raced: // an activation came and went during the read: read again
		n.changes.add(id)
		return
	case err != nil:
		n.log.Error("actor: failed to read a sandbox another node changed", "sandbox", id, "err", err)
		return
	}
	n.settledLocked(id)
	if st.exists {
		n.owners.set(id, st.tenant)
	} else {
		n.owners.remove(id)
		aside = n.dropDeletedLocked(id)
	}
	if st.alarm.IsZero() {
		n.alarms.clear(id)
	} else {
		n.alarms.set(id, st.alarm)
	}
}
