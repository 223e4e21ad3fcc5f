package cluster

import (
	"sort"
	"sync"
)

// overlay holds this node's acknowledged batches that its own replica has not
// applied yet, per sandbox, so that an owner reads its own writes the moment Write
// returns. A follower learns that an entry committed only with the leader's next
// append, up to CommitTimeout later; without the overlay an owner that is not the
// leader would read its sandbox as it was before its last write.
//
// An entry is added when the leader acknowledges its group (with the group's raft
// index), unless the replica has already applied that index, and dropped once the
// replica's applied index reaches it. Readers combine it with one read transaction
// of the state file: they take the overlay first and then keep only entries above
// the index that transaction holds, so an entry pruned in between is in the file.
//
// It also remembers sandboxes whose last write had an unknown outcome: their next
// Read first waits until those writes have left this node's committer, then for
// the replica to reach an index the current leader committed (Node.sync), so the
// outcome is known before anyone reads.
//
// Concurrency: all methods are safe for concurrent use; slices handed out are never
// modified afterwards.
type overlay struct {
	mu        sync.Mutex
	applied   uint64
	pending   map[string][]ovEntry
	uncertain map[string]uncertainty
	gen       uint64
}

// uncertainty is a sandbox's writes with unknown outcomes: the generation of the
// latest, and the done channels of those that may still be in this node's
// committer (a Write whose ctx ended first).
type uncertainty struct {
	gen   uint64
	dones []<-chan struct{}
}

type ovEntry struct {
	index uint64
	b     *Batch
}

func newOverlay(applied uint64) *overlay {
	return &overlay{applied: applied, pending: map[string][]ovEntry{}, uncertain: map[string]uncertainty{}}
}

// add records the accepted batches of a group acknowledged at index, in group order.
func (o *overlay) add(index uint64, bs []*Batch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if index <= o.applied {
		return
	}
	for _, b := range bs {
		old := o.pending[b.Sandbox]
		i := sort.Search(len(old), func(i int) bool { return old[i].index > index })
		es := make([]ovEntry, 0, len(old)+1) // copy on write: readers hold old
		es = append(es, old[:i]...)
		es = append(es, ovEntry{index: index, b: b})
		o.pending[b.Sandbox] = append(es, old[i:]...)
	}
}

// prune drops entries the replica has applied (index <= applied).
func (o *overlay) prune(applied uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied = applied
	for sb, es := range o.pending {
		i := sort.Search(len(es), func(i int) bool { return es[i].index > applied })
		switch {
		case i == len(es):
			delete(o.pending, sb)
		case i > 0:
			o.pending[sb] = es[i:]
		}
	}
}

// get returns the pending entries of one sandbox.
func (o *overlay) get(sandbox string) []ovEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending[sandbox]
}

// all returns the pending entries of every sandbox.
func (o *overlay) all() map[string][]ovEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string][]ovEntry, len(o.pending))
	for k, v := range o.pending {
		out[k] = v
	}
	return out
}

// markUncertain records an unknown outcome for sandbox; done, when not nil, is
// closed once the write has left the committer.
func (o *overlay) markUncertain(sandbox string, done <-chan struct{}) {
	o.mu.Lock()
	o.gen++
	u := o.uncertain[sandbox]
	u.gen = o.gen
	if done != nil {
		u.dones = append(u.dones[:len(u.dones):len(u.dones)], done)
	}
	o.uncertain[sandbox] = u
	o.mu.Unlock()
}

// uncertainty returns sandbox's unknown outcomes (gen 0: none).
func (o *overlay) uncertainty(sandbox string) uncertainty {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.uncertain[sandbox]
}

// settled clears sandbox's mark if no newer unknown outcome replaced gen.
func (o *overlay) settled(sandbox string, gen uint64) {
	o.mu.Lock()
	if o.uncertain[sandbox].gen == gen {
		delete(o.uncertain, sandbox)
	}
	o.mu.Unlock()
}

// delta is the combined effect of one sandbox's pending batches above the index a
// read transaction holds: whether a DeleteSandbox hides the file's records, and the
// last op on each key since.
type delta struct {
	cleared bool
	ops     map[string]Op
	keys    []string // the keys of ops, sorted
	puts    bool     // some op is a put
}

// deltaOf returns the delta of es above index, nil when there is none.
func deltaOf(es []ovEntry, index uint64) *delta {
	var d *delta
	for _, e := range es {
		if e.index <= index {
			continue
		}
		if d == nil {
			d = &delta{ops: map[string]Op{}}
		}
		if e.b.DeleteSandbox {
			d.cleared, d.ops = true, map[string]Op{}
		}
		for _, op := range e.b.Ops {
			d.ops[string(op.Key)] = op
		}
	}
	if d == nil {
		return nil
	}
	d.keys = make([]string, 0, len(d.ops))
	for k, op := range d.ops {
		d.keys = append(d.keys, k)
		d.puts = d.puts || !op.Delete
	}
	sort.Strings(d.keys)
	return d
}
