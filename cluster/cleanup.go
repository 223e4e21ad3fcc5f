package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// Dead-server cleanup: the leader removes from the raft configuration a server that
// has been gone for longer than Config.DeadServerTimeout, as raft-autopilot's
// CleanupDeadServers does, and promote (leader.go) then fills its seat with a
// non-voter. A dead voter left in place still counts towards the quorum: in a
// cluster of three voters and a spare, one dead voter leaves the cluster one failure
// away from a halt although a healthy spare could vote.
//
// We do not use raft-autopilot itself: it detects failure from its own stats RPCs
// and promotes with its own promoter (every stable non-voter, by default), while
// this package already has a failure detector the placement relies on (leases, the
// member table's down status) and a voter target of 3 or 5. Adapting autopilot would
// mean replacing both or running two sets of rules over one configuration; the rule
// below is the part of it we need.
//
// A server is dead when its member is down, left (a removal that marked it left
// and then lost leadership, or failed, before it changed the configuration: a left
// member is refused heartbeats, so nothing else would finish the job), or missing
// from the member table (a raft server the table never registered), and the leader
// has not heard from it for DeadServerTimeout, counted from this leadership's start
// at the earliest. Then:
//
//   - A dead non-voter is removed: it counts for nothing.
//   - A dead voter is removed only when the voters that remain still have a healthy
//     majority (the change itself must commit, and the cluster must stay writable
//     after it), and when the cluster keeps its target afterwards: there are more
//     voters than the target, or a healthy non-voter is there to be promoted in its
//     place. With three voters and no spare a dead voter stays: removing it would
//     leave two voters that both must answer, no better than three with one gone,
//     and a voter that comes back rejoins by itself while one removed must be joined
//     again.
//
// One voter is removed per pass, so each decision sees the configuration the last
// one made. The removed member is marked left (Remove), so if the node comes back it
// is refused heartbeats until it is joined again.

// cleanupDead is the leader's dead-server pass; it runs before promote on each
// reconcile pass.
func (n *Node) cleanupDead(ctx context.Context) {
	if n.deadAfter.Load() < 0 {
		return
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	d := n.deadServers(f.Configuration().Servers, n.fsm.cur.Load(), n.now())
	for _, id := range d.nonvoters {
		n.removeDead(ctx, id, false)
	}
	switch d.voterVerdict() {
	case keepNoMajority:
		n.log.Warn("cluster: a dead voter stays: the voters left would have no healthy majority",
			"node", d.voters[0], "voters", d.voterCount, "healthy", d.healthyVoters)
	case keepNoSpare:
		n.deadKept.Add(1)
		n.log.Debug("cluster: a dead voter stays until a non-voter can take its place", "node", d.voters[0], "voters", d.voterCount)
	case removeVoter:
		n.removeDead(ctx, d.voters[0], true)
	}
}

// What the pass does with the first dead voter.
const (
	noDeadVoter    = iota
	removeVoter    // remove it
	keepNoMajority // keep it: the voters left would have no healthy majority
	keepNoSpare    // keep it: fewer voters than the target and no non-voter to promote
)

// voterVerdict applies the rule of the file's doc to the first dead voter of d.
func (d deadSet) voterVerdict() int {
	if len(d.voters) == 0 {
		return noDeadVoter
	}
	remaining := d.voterCount - 1
	switch {
	case d.healthyVoters < remaining/2+1:
		return keepNoMajority
	case remaining < d.target && d.spares == 0:
		return keepNoSpare
	}
	return removeVoter
}

// deadSet is one pass's view of the raft configuration.
type deadSet struct {
	voters, nonvoters []NodeID // dead, in configuration order
	voterCount        int
	healthyVoters     int // voters heard within L + δ (this leader included)
	spares            int // healthy non-voters promote would take
	target            int
}

// deadServers sorts the configuration's servers into dead and healthy ones.
func (n *Node) deadServers(servers []raft.Server, s *state, now time.Duration) deadSet {
	d := deadSet{target: voterTarget(len(aliveIDs(s)))}
	for _, srv := range servers {
		id := NodeID(srv.ID)
		voter := srv.Suffrage == raft.Voter
		if voter {
			d.voterCount++
		}
		m, known := s.members[id]
		healthy := id == n.cfg.NodeID || (known && s.serving(id) && n.live.silent(id, now) <= n.grace())
		gone := !known || m.Status == StatusDown || m.Status == StatusLeft
		dead := id != n.cfg.NodeID && gone && n.live.silent(id, now) > time.Duration(n.deadAfter.Load())
		switch {
		case dead && voter:
			d.voters = append(d.voters, id)
		case dead:
			d.nonvoters = append(d.nonvoters, id)
		case healthy && voter:
			d.healthyVoters++
		case healthy && srv.Suffrage == raft.Nonvoter && m.Status == StatusAlive && n.live.hasBeat(id):
			d.spares++
		}
	}
	return d
}

// removeDead takes a dead server out, as Remove does, and logs it.
func (n *Node) removeDead(ctx context.Context, id NodeID, voter bool) {
	if err := n.remove(ctx, id); err != nil {
		n.log.Warn("cluster: failed to remove a dead server", "node", id, "voter", voter, "err", err)
		return
	}
	n.log.Info("cluster: removed a dead server from the raft configuration", "node", id, "voter", voter,
		"gone_for_more_than", time.Duration(n.deadAfter.Load()))
}
