package cluster

import (
	"sync/atomic"
	"time"
)

// The node side of leases: the lease itself, the admission check that reads it, and
// the fencer that tells the gateway when it lapses or returns. The heartbeats that
// renew it are in heartbeat.go, the leader's side in liveness.go.

// monoBase anchors the package's monotonic clock: durations since it come from the
// monotonic reading of time.Now, which wall-clock steps do not move.
var monoBase = time.Now()

// mono is the package's clock: the monotonic time since monoBase.
func mono() time.Duration { return time.Since(monoBase) }

// lease is this node's lease: the monotonic instant (see mono) until which it may
// serve its partitions, 0 when it never had one. Only the heartbeat loop extends it,
// and only forward.
type lease struct {
	until   atomic.Int64
	renewed chan struct{} // wakes the fencer; buffered 1
}

// extend moves the lease's end to until if that is later, and wakes the fencer.
func (l *lease) extend(until time.Duration) {
	for {
		cur := l.until.Load()
		if int64(until) <= cur {
			return
		}
		if l.until.CompareAndSwap(cur, int64(until)) {
			break
		}
	}
	select {
	case l.renewed <- struct{}{}:
	default:
	}
}

// Lease reports whether this node holds a valid lease now, and when the lease it
// holds or last held ends (the zero Time if it never had one). A node with no valid
// lease must run nothing: Admit refuses every sandbox. The time carries a monotonic
// reading, so time.Until(until) is exact.
func (n *Node) Lease() (valid bool, until time.Time) {
	u := time.Duration(n.lease.until.Load())
	if u == 0 {
		return false, time.Time{}
	}
	return !n.closed.Load() && n.now() < u, monoBase.Add(u)
}

// Admit is the check before every actor turn: it returns nil only if this node's
// table gives it the sandbox (its partition, or its pin) and its lease is valid now.
// Otherwise it returns a *NotOwnerError naming the owner in the local table (the
// gateway forwards there), ErrHandoff while the sandbox's partition is being handed
// to another member (on every node: the gateway holds the request and checks again),
// ErrLeaseExpired (the gateway answers 503 and the actor must not run), or ErrClosed
// after Close. It takes no lock and allocates nothing when it admits; see
// BenchmarkAdmit.
//
// The local table may be behind the leader's, but never in a way that lets two nodes
// admit one sandbox: a lease is only renewed once the table is as current as the
// leader's was when it confirmed the heartbeat, and the leader gives a node's
// partitions away only when that node's lease has run out (see the package doc).
func (n *Node) Admit(sandboxID string) error {
	owner, epoch, ok := n.fsm.cur.Load().owner(sandboxID)
	if !ok && owner != "" {
		return ErrHandoff // only a partition in handoff has an owner and is not active
	}
	if !ok || owner != n.cfg.NodeID {
		return &NotOwnerError{SandboxID: sandboxID, Owner: owner, Epoch: epoch}
	}
	if n.closed.Load() {
		return ErrClosed
	}
	if n.now() >= time.Duration(n.lease.until.Load()) {
		return ErrLeaseExpired
	}
	return nil
}

// Epoch returns the epoch of the sandbox's current assignment in the local table (0
// if it never had one). The gateway stamps the writes of an admitted turn with it,
// so a store can refuse writes of an owner that has since been replaced.
func (n *Node) Epoch(sandboxID string) uint64 {
	_, epoch, _ := n.fsm.cur.Load().owner(sandboxID)
	return epoch
}

// fence runs OnFence and OnLease on the lease's transitions, on its own goroutine:
// OnFence once each time the lease runs out, OnLease once each time it is valid
// again. It wakes when the lease is renewed and when it is due to run out.
func (n *Node) fence() {
	defer n.wg.Done()
	held := false
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now, until := n.now(), time.Duration(n.lease.until.Load())
		switch valid := now < until; {
		case valid && !held:
			held = true
			n.log.Info("cluster: lease obtained", "until", until-now)
			if n.cfg.OnLease != nil {
				n.cfg.OnLease()
			}
		case !valid && held:
			held = false
			n.log.Warn("cluster: lease lapsed; fencing this node")
			if n.cfg.OnFence != nil {
				n.cfg.OnFence()
			}
		}
		wait := time.Hour
		if now < until {
			wait = until - now
		}
		t.Reset(wait)
		select {
		case <-n.ctx.Done():
			return
		case <-n.lease.renewed:
		case <-t.C:
		}
	}
}
