package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The leader's own lease is written to the log, so that the next leader knows when it
// was last renewed (see "Leases and fencing" in the package doc):
//
//   - A leader renews its own lease by committing a cmdLeaderLease entry naming itself,
//     every L/3, from the first one it commits after its Barrier; it grants no
//     heartbeat before that first one has committed, and none to itself ever. Its
//     lease then runs to the moment it submitted the entry + L.
//   - Every replica notes, outside the replicated state, the last such entry it
//     applied and when (its own monotonic clock). Receiving an entry comes after its
//     leader submitted it, and applying it after receiving it, so that instant is no
//     earlier than the start of the lease the entry granted.
//   - A new leader that finds the previous leader's entry to be the last lease entry
//     of the log, with no entry of another term between it and its own term, counts
//     that member as last heard when it applied the entry, instead of at its own
//     election: the failover of a leader that owned sandboxes no longer adds the
//     election to L + δ.

// cmdLeaderLease is a leader's renewal of its own lease: the leader's id. Ignorable:
// a replica of an older version skips it (and, leading, waits L + δ from its
// election, as before).
const cmdLeaderLease = cmdIgnorable | 1

func encodeLeaderLease(id NodeID) []byte {
	e := encoder{b: []byte{byte(cmdLeaderLease)}}
	e.string(string(id))
	return e.b
}

// leaseNote is a replica's record of the last cmdLeaderLease entry it applied.
type leaseNote struct {
	node  NodeID
	term  uint64        // the entry's raft term: its leader's term
	index uint64        // the entry's raft index
	at    time.Duration // when this replica applied it (mono)
}

// leaseNotes holds the fsm's leaseNote. It is local knowledge, never in a snapshot: a
// restored snapshot may hold later entries than the note, so Restore clears it.
type leaseNotes struct {
	mu   sync.Mutex
	last leaseNote
}

// note records an applied cmdLeaderLease entry, at now. An entry it cannot read (a
// newer encoding) clears the note rather than leaving an older one in its place.
func (l *leaseNotes) note(lg *raft.Log, now time.Duration) {
	d := decoder{b: lg.Data[1:]}
	id := NodeID(d.string())
	next := leaseNote{node: id, term: lg.Term, index: lg.Index, at: now}
	if d.done() != nil || id == "" {
		next = leaseNote{}
	}
	l.mu.Lock()
	l.last = next
	l.mu.Unlock()
}

// clear forgets the note (a snapshot was restored).
func (l *leaseNotes) clear() {
	l.mu.Lock()
	l.last = leaseNote{}
	l.mu.Unlock()
}

func (l *leaseNotes) get() leaseNote {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// maxLeaseScan bounds how many log entries a new leader reads to check that no other
// leadership came between the last lease entry and its own; past it, it waits from
// its election.
const maxLeaseScan = 50_000

// countFromLog lets a new leadership of term, after its Barrier, count from the log's
// last lease entry rather than from its own start, when no leadership between that
// entry's and this one committed anything (so none granted a lease): every entry of
// earlier terms has been applied then, so the note is the last lease entry before
// term. Call it before this leadership's own first lease entry.
//   - This node's own entry: its last leadership, if this node kept its record, knew
//     every lease granted up to its end, and nobody granted one since; the new one
//     takes that record up (liveness.resume).
//   - Another member's entry: that member's leases all began no later than this
//     replica applied it. countFromLog returns that member and that instant, for
//     floorPrevious once this leadership is ready.
func (n *Node) countFromLog(term uint64) (prev NodeID, at time.Duration, ok bool) {
	last := n.fsm.leases.get()
	if last.node == "" || last.term >= term {
		return "", 0, false
	}
	if last.term+1 < term && !onlyTerms(n.store, last.index, last.term, term) {
		return "", 0, false
	}
	if last.node == n.cfg.NodeID {
		if n.live.resume(last.term) {
			n.log.Debug("cluster: leadership resumed its last lease record", "term", last.term)
		}
		return "", 0, false
	}
	return last.node, last.at, true
}

// floorPrevious counts the previous leader's silence from at (see countFromLog), but
// from no earlier than L/2 + δ before now, when this leadership is ready: a previous
// leader that lost an election but lives then has at least L/2 to be heard from
// before its partitions can move. At the defaults an election is shorter than that,
// and the floor is the entry's apply.
func (n *Node) floorPrevious(id NodeID, at time.Duration) {
	at = max(at, n.now()+n.cfg.LeaseTTL/2-n.grace())
	n.live.floor(id, at)
	if n.cfg.onFloor != nil {
		n.cfg.onFloor(id, at)
	}
	n.log.Info("cluster: previous leader counted from its last lease entry", "node", id, "ago", n.now()-at)
}

// onlyTerms reports whether every entry of logs after index has term prev, up to the
// first of term cur: no leadership of a term between them committed its Barrier, so
// none granted a lease. An entry it cannot read counts against.
func onlyTerms(logs raft.LogStore, index, prev, cur uint64) bool {
	lastIdx, err := logs.LastIndex()
	if err != nil || lastIdx < index || lastIdx-index > maxLeaseScan {
		return false
	}
	var lg raft.Log
	for i := index + 1; i <= lastIdx; i++ {
		if err := logs.GetLog(i, &lg); err != nil {
			return false
		}
		switch lg.Term {
		case prev:
		case cur:
			return true
		default:
			return false
		}
	}
	return true
}

// renewOwnLease commits one cmdLeaderLease entry and, once it is applied, extends
// this node's lease to its submission + L and counts itself heard then (a leader is
// a member like the others: silent for L + δ, it is failed). While the heartbeat test
// hook pauses the node, or once it is removed (left), the entry is committed but the
// lease is not extended.
func (n *Node) renewOwnLease(ctx context.Context) error {
	sent := n.now()
	if err := n.apply(ctx, encodeLeaderLease(n.cfg.NodeID)); err != nil {
		return err
	}
	if n.hbPaused.Load() {
		return nil
	}
	if m, ok := n.fsm.cur.Load().members[n.cfg.NodeID]; ok && m.Status == StatusLeft {
		return nil // removed: no lease, as a heartbeat of a removed member is refused
	}
	n.live.touch(n.cfg.NodeID, sent)
	n.lease.extend(sent + n.cfg.LeaseTTL)
	return nil
}

// ownLease renews the leader's own lease every L/3 until ctx ends (the leadership):
// half the heartbeats' rate, since each renewal is a log entry every replica syncs,
// and the lease still has 2/3 L to spare.
func (n *Node) ownLease(ctx context.Context) {
	t := time.NewTicker(n.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.renewOwnLease(ctx); err != nil && ctx.Err() == nil {
			n.log.Debug("cluster: failed to renew the leader's own lease", "err", err)
		}
	}
}
