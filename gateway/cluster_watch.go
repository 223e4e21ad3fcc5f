package gateway

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// aloneLease is how far ahead a node that is the cluster's only member extends its
// sandboxes' init-held lease: nobody can take its sandboxes over, so a pause of the
// server (a debugger, SIGSTOP) need not freeze them. Once a second member is in the
// table the inits hold the real node lease again within this long.
const aloneLease = 30 * time.Second

// watchCluster keeps the local side of ownership in step with the cluster, every
// tick (a sixth of the lease, so the inits' deadlines trail the node's lease by
// at most that):
//   - it pushes the node lease to every sandbox's init (runtime.Lease), which
//     freezes the sandbox's processes when the server stops renewing it;
//   - it releases activations of sandboxes the table gave to another node;
//   - it publishes which partitions have busy sandboxes, so the leader does not
//     move them to rebalance (cluster.Config.Busy).
func (s *Server) watchCluster(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.renewInitLease()
		s.releaseMoved()
		s.publishBusy()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// initLeaseSlack is how long after the node's lease the inits' lease ends: half of
// the margin δ (cluster.DefaultLeaseMargin) by which the leader waits past a silent
// node's lease before it gives its sandboxes away, so the inits still stop before a
// new owner can start, while a renewal that this server's ticker pushes a little
// late does not freeze a healthy sandbox.
const initLeaseSlack = cluster.DefaultLeaseMargin / 2

// renewInitLease extends the inits' lease to the node's, or further while alone.
func (s *Server) renewInitLease() {
	if s.initLease == nil {
		return
	}
	if s.alone() {
		s.initLease.Extend(time.Now().Add(aloneLease))
		return
	}
	if valid, until := s.cluster.Lease(); valid {
		s.initLease.Extend(until.Add(initLeaseSlack))
	}
}

// alone reports whether this node is the only member of its cluster.
func (s *Server) alone() bool {
	ms := s.cluster.Members()
	return len(ms) == 1 && ms[0].ID == s.cluster.ID()
}

// releaseMoved ends the activations of sandboxes the table now gives to another
// node: their processes end and their next request goes to the new owner.
func (s *Server) releaseMoved() {
	var moved []string
	for _, id := range s.node.ActiveSandboxes() {
		if err := s.cluster.Admit(id); err != nil && errors.Is(err, cluster.ErrNotOwner) {
			moved = append(moved, id)
		}
	}
	if len(moved) > 0 {
		s.log.Info("sandboxes moved to other nodes: ending their activations here", "count", len(moved), "first", moved[0])
		s.node.Release(moved)
	}
}

// publishBusy records the partitions of sandboxes with running work or clients.
func (s *Server) publishBusy() {
	busy := map[int]bool{}
	for _, id := range s.node.BusySandboxes() {
		busy[cluster.PartitionOf(id)] = true
	}
	s.hooks.busy.Store(&busy)
}

// busyPartition is cluster.Config.Busy: whether partition p has busy sandboxes
// here, as of the last tick.
func (h *clusterHooks) busyPartition(p int) bool {
	m := h.busy.Load()
	return m != nil && (*m)[p]
}

// fence is cluster.Config.OnFence once the server exists: the lease lapsed, so
// another node may soon run this node's sandboxes. Every activation ends and every
// process with it, unless this node is the cluster's only member (nobody can take
// its sandboxes over; it goes on when its lease is renewed).
func (s *Server) fence() {
	if s.alone() {
		s.log.Warn("cluster lease lapsed on the only member: keeping its sandboxes until it is renewed")
		return
	}
	s.node.Fence("this node's cluster lease lapsed")
}

// leaseOrDefault is the node lease L of Config.LeaseTTL.
func leaseOrDefault(l time.Duration) time.Duration {
	if l <= 0 {
		return cluster.DefaultLeaseTTL
	}
	return l
}

// sandboxesChanged tells the actor node which sandboxes other nodes wrote, so its
// tenant and alarm indexes follow; nil (a snapshot was installed) means any may
// have, and every stored sandbox is re-read, off the FSM goroutine.
func (s *Server) sandboxesChanged(ids []string) {
	if ids != nil {
		s.node.SandboxesChanged(ids)
		return
	}
	s.bg.Go(func() {
		var all []string
		err := s.store.Sandboxes(context.Background(), nil, func(id string, _ []byte) error {
			if !strings.HasPrefix(id, "_") {
				all = append(all, id)
			}
			return nil
		})
		if err != nil {
			s.log.Warn("failed to list sandboxes after a snapshot was installed", "err", err)
			return
		}
		s.node.SandboxesChanged(all)
	})
}
