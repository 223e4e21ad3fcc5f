package cluster

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// replayGate is a gate (Config.BeforeBatches) that holds only the batch entries from
// index from on, and records the last batch entry index it was asked about.
type replayGate struct {
	gate
	from atomic.Uint64 // 0 holds every batch entry while shut
	last atomic.Uint64 // written on the FSM goroutine only
}

func (g *replayGate) wait(i uint64) {
	if i > g.last.Load() {
		g.last.Store(i)
	}
	if i >= g.from.Load() {
		g.gate.wait(i)
	}
}

// TestLeaseWaitsForReplay restarts the owner of a sandbox with a state file that lacks
// the messages it wrote before the restart (removed, as an earlier boot's torn file
// is at Open), and holds its replica before the first of them. The leader's grants
// carry the table's index, which is older than the messages, so the replica reaches
// it; the node must still not hold a lease, nor admit the sandbox, before it has
// caught up with every entry committed before (caughtUp): an owner serving then would
// answer from the past (an empty take of messages it had queued). Once the replica
// is let go, it admits the sandbox and reads every message.
func TestLeaseWaitsForReplay(t *testing.T) {
	t.Parallel()
	gates := []*replayGate{{}, {}, {}}
	nodes := clusterWith(t, 3, func(i int, cfg *Config) {
		// The owner must not be failed while it restarts: a lease far longer than a
		// restart on a loaded machine. Raft at 0.3× rides out its stalls.
		cfg.LeaseTTL = 4 * time.Second
		cfg.LeaseMargin = time.Second
		cfg.Multiplier = 0.3
		cfg.BeforeBatches = gates[i].wait
	})
	owner, sb := followerOwner(t, nodes)
	ia := -1
	var others []*Node
	var otherGates []*replayGate
	for i, nd := range nodes {
		if nd == owner {
			ia = i
			continue
		}
		others = append(others, nd)
		otherGates = append(otherGates, gates[i])
	}
	mustWrite(t, owner, sb, "before", "1")

	from := leader(t, nodes...).AppliedIndex() + 1 // every message is at or after it
	msgs := []string{"m1", "m2", "m3"}
	for _, m := range msgs {
		mustWrite(t, owner, sb, m, "queued")
	}
	caughtUp(t, others...)
	var after uint64 // the last batch entry before the restart
	for _, g := range otherGates {
		after = max(after, g.last.Load())
	}

	addr, cfg := owner.RaftAddr(), owner.cfg
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.DataDir, "raft", "state.db")); err != nil {
		t.Fatal(err)
	}
	g := gates[ia]
	g.from.Store(from)
	g.shut()
	defer g.open() // before the cleanup closes the node
	cfg.RaftListen = addr
	restarted := openNode(t, &cfg)

	// The restarted node asks for its first lease only after the grant (and its
	// index) arrived; its sync through the leader is then the only batch entry
	// written after the messages. Until it is seen, and at every look, the node
	// must refuse the sandbox.
	waitFor(t, "the restarted owner to sync before its first lease", func() bool {
		if err := restarted.Admit(sb); err == nil {
			t.Fatalf("%s admits %s while its replica lacks entries committed before its lease", restarted.ID(), sb)
		}
		if valid, _ := restarted.Lease(); valid {
			t.Fatalf("%s holds a lease while its replica lacks entries committed before it", restarted.ID())
		}
		synced := false
		for i, o := range others {
			if ti := o.TableIndex(); ti >= from {
				t.Fatalf("the table changed after the messages (index %d >= %d): the test needs grants older than them", ti, from)
			}
			synced = synced || otherGates[i].last.Load() > after
		}
		return synced
	})
	if got := get(t, restarted, sb, "m1"); got != "<nil>" {
		t.Fatalf("m1 = %q while the replica is held before it: the hold did not hold", got)
	}
	if err := restarted.Admit(sb); err == nil {
		t.Fatalf("%s admits %s after its sync was sent, still held", restarted.ID(), sb)
	}

	g.open()
	waitFor(t, "the restarted owner to admit its sandbox", func() bool { return restarted.Admit(sb) == nil })
	for _, m := range append([]string{"before"}, msgs...) {
		if got := get(t, restarted, sb, m); got == "<nil>" {
			t.Errorf("%s: %s missing on the restarted owner once it admits", sb, m)
		}
	}
}
