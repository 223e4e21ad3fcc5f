package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestOpenConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  *Config
	}{
		{"nil", nil},
		{"no node id", &Config{DataDir: t.TempDir(), Secret: testSecret}},
		{"no data dir", &Config{NodeID: "a", Secret: testSecret}},
		{"no secret", &Config{NodeID: "a", DataDir: t.TempDir()}},
		{"short secret", &Config{NodeID: "a", DataDir: t.TempDir(), Secret: testSecret[:MinSecretLen-1]}},
		{"negative multiplier", &Config{NodeID: "a", DataDir: t.TempDir(), Secret: testSecret, Multiplier: -1}},
		{"negative lease", &Config{NodeID: "a", DataDir: t.TempDir(), Secret: testSecret, LeaseTTL: -time.Second}},
		{"negative margin", &Config{NodeID: "a", DataDir: t.TempDir(), Secret: testSecret, LeaseMargin: -time.Second}},
		{"lease too short", &Config{NodeID: "a", DataDir: t.TempDir(), Secret: testSecret, LeaseTTL: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Open(context.Background(), tt.cfg); !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestSingleNodeBootstrapsAndResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := openNode(t, testConfig("solo", dir, "127.0.0.1:0", false))
	addr := n.RaftAddr()
	waitFor(t, "solo to place all partitions", func() bool { return placed(n, n) })
	owner, epoch, ok := n.Owner("sb-1")
	if !ok || owner != "solo" || epoch == 0 {
		t.Fatalf("Owner = %s, %d, %v", owner, epoch, ok)
	}
	before := n.Table()
	// A file snapshot, so the restart restores the FSM from it (synchronously, in
	// Open) rather than only replaying the log.
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := n.Join(context.Background(), Member{ID: "x", RaftAddr: "y"}); err == nil {
		t.Fatal("Join on a closed node succeeded")
	}

	// Same data dir, Join set: raft state exists, so it resumes rather than waiting.
	n = openNode(t, testConfig("solo", dir, addr, true))
	if !sameTableAs(n.Table(), before) {
		t.Fatal("the table was not restored from the snapshot on Open")
	}
	leader(t, n)
	if _, e, _ := n.Owner("sb-1"); e != epoch {
		t.Fatalf("epoch %d after restart, want %d: the table was re-placed", e, epoch)
	}
}

func sameTableAs(a, b []Assignment) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestJoinWaitsToBeAdded(t *testing.T) {
	t.Parallel()
	n := openNode(t, testConfig("waiter", t.TempDir(), "127.0.0.1:0", true))
	err := n.Join(context.Background(), Member{ID: "x", RaftAddr: "127.0.0.1:1"})
	var nl *NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNotLeader) || nl.LeaderID != "" {
		t.Fatalf("Join on an unjoined node: %v", err)
	}
	if len(n.Members()) != 0 || n.Partition(0).State != PartitionUnassigned {
		t.Fatal("a node waiting to join bootstrapped a cluster of its own")
	}
}

func TestThreeNodes(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3)
	l := leader(t, nodes...)
	var follower *Node
	for _, n := range nodes {
		if n != l {
			follower = n
		}
	}

	// Followers refuse leader-only calls and name the leader for forwarding (once
	// they know it: a spurious election may leave them without one for a moment).
	waitFor(t, "a follower naming the leader", func() bool {
		l = leader(t, nodes...)
		for _, n := range nodes {
			if n != l {
				follower = n
			}
		}
		err := follower.Join(context.Background(), Member{ID: "x", RaftAddr: "127.0.0.1:1"})
		nl, ok := LeaderOf(err)
		if !ok {
			t.Fatalf("Join on a follower: %v", err)
		}
		return nl.LeaderID == l.ID() && nl.HTTPAddr == "http-"+string(l.ID()) && nl.RaftAddr == l.RaftAddr()
	})
	for _, n := range nodes {
		if got := len(n.Members()); got != 3 {
			t.Fatalf("%s sees %d members", n.ID(), got)
		}
	}

	// Kill the leader: the others elect a new one and keep the table.
	table := l.Table()
	dir, addr, lastIndex := l.cfg.DataDir, l.RaftAddr(), l.raft.LastIndex()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var rest []*Node
	for _, n := range nodes {
		if n != l {
			rest = append(rest, n)
		}
	}
	nl2 := leader(t, rest...)
	if nl2 == l {
		t.Fatal("closed node still leads")
	}
	// A follower learns the last commit index with the next append, so it may
	// lag the dead leader for a moment; committed entries must still all arrive. The
	// dead leader's own partitions may meanwhile move on, L + δ after its last
	// heartbeat, to a survivor at a later epoch.
	for _, n := range rest {
		waitFor(t, string(n.ID())+" to have the dead leader's table", func() bool {
			now := n.Table()
			for p, a := range table {
				if now[p] != a && (a.Owner != l.ID() || now[p].Owner == l.ID() || now[p].Epoch <= a.Epoch) {
					return false
				}
			}
			return true
		})
	}
	// Control writes work on the new leader.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	waitFor(t, "a pin through the new leader", func() bool {
		_, err := leader(t, rest...).Pin(ctx, "sb-pinned", nil)
		return err == nil
	})

	// Restart the old leader on its data dir: it has its state before any contact,
	// then catches up with what it missed.
	back := openNode(t, testConfig(l.ID(), dir, addr, false))
	if got := back.raft.LastIndex(); got < lastIndex {
		t.Fatalf("restarted node has log up to %d, had %d before: state not durable", got, lastIndex)
	}
	all := append(rest, back)
	waitFor(t, "the restarted node to catch up", func() bool {
		o, _, ok := back.Owner("sb-pinned")
		return ok && o != "" && sameTable(all...) && back.AppliedIndex() >= rest[0].AppliedIndex()
	})
	if len(back.Members()) != 3 {
		t.Fatalf("restarted node sees %v", back.Members())
	}
}

func TestRemoveAndPin(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l := leader(t, nodes...)
	var gone *Node
	var stay []*Node
	for _, n := range nodes {
		if n != l && gone == nil {
			gone = n
		} else {
			stay = append(stay, n)
		}
	}
	// Pin a sandbox to the member that will leave, by its labels.
	self := gone.Self()
	self.Labels = map[string]string{"pool": "gpu"}
	waitFor(t, "the labels re-registered", func() bool {
		err := leader(t, nodes...).Join(ctx, self) // leadership may move under load
		return err == nil
	})
	var a Assignment
	err := onLeader(t, nodes, func(l *Node) (err error) {
		a, err = l.Pin(ctx, "sb-gpu", map[string]string{"pool": "gpu"})
		return err
	})
	if err != nil || a.Owner != gone.ID() {
		t.Fatalf("Pin = %+v, %v; want owner %s", a, err, gone.ID())
	}
	if err := onLeader(t, nodes, func(l *Node) error {
		_, err := l.Pin(ctx, "sb-x", map[string]string{"pool": "tpu"})
		return err
	}); !errors.Is(err, ErrNoMatchingMember) {
		t.Fatalf("Pin to no match: %v", err)
	}
	waitFor(t, "the pin everywhere", func() bool {
		for _, n := range nodes {
			if o, e, ok := n.Owner("sb-gpu"); !ok || o != gone.ID() || e != a.Epoch {
				return false
			}
		}
		return true
	})

	if err := onLeader(t, nodes, func(l *Node) error { return l.Remove(ctx, gone.ID()) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "partitions of the removed member to move", func() bool {
		return placed(stay[0], stay...) && sameTable(stay...)
	})
	// The pin has no matching member left: it is unassigned, not silently moved.
	waitFor(t, "the orphan pin to be unassigned", func() bool {
		_, _, ok := stay[0].Owner("sb-gpu")
		return !ok
	})
	for _, m := range stay[0].Members() {
		if m.ID == gone.ID() && m.Status != StatusLeft {
			t.Fatalf("removed member has status %s", m.Status)
		}
	}
	if err := onLeader(t, stay, func(l *Node) error { return l.Unpin(ctx, "sb-gpu") }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unpinned sandbox back on its partition's owner", func() bool {
		o, _, ok := stay[0].Owner("sb-gpu")
		return ok && o != gone.ID()
	})
	if err := onLeader(t, stay, func(l *Node) error { return l.Remove(ctx, "nobody") }); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("Remove of an unknown member: %v", err)
	}
}

func TestRemoveLeader(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l := leader(t, nodes...)
	if err := l.Remove(ctx, l.ID()); err != nil && !errors.Is(err, ErrNotLeader) {
		// Stepping down while the change commits may surface as leadership lost.
		t.Fatal(err)
	}
	var rest []*Node
	for _, n := range nodes {
		if n != l {
			rest = append(rest, n)
		}
	}
	// If the removal did not commit (leadership lost first), l may lead again: ask
	// whoever leads until the configuration no longer has it.
	waitFor(t, "the removed leader out of the configuration", func() bool {
		if err := leader(t, nodes...).Remove(ctx, l.ID()); err != nil && !errors.Is(err, ErrNotLeader) {
			t.Logf("remove again: %v", err)
		}
		f := rest[0].raft.GetConfiguration()
		if f.Error() != nil {
			return false
		}
		for _, srv := range f.Configuration().Servers {
			if NodeID(srv.ID) == l.ID() {
				return false
			}
		}
		return true
	})
	waitFor(t, "the others to take over the removed leader's partitions", func() bool {
		var nl *Node
		for _, n := range rest {
			if n.IsLeader() {
				nl = n
			}
		}
		return nl != nil && voters(nl) == 2 && placed(rest[0], rest...) && sameTable(rest...)
	})
}

// onLeader runs a leader-only call on whichever node leads, again while it fails
// because leadership moved (spurious elections are common at test timeouts), and
// returns its first other result. A stale epoch is retried too: after an
// indeterminate failure the first attempt may have committed, and a new leader's
// replica may not have applied it yet when the retry reads it.
func onLeader(tb testing.TB, nodes []*Node, call func(l *Node) error) error {
	tb.Helper()
	var err error
	waitFor(tb, "a leader-only call", func() bool {
		err = call(leader(tb, nodes...))
		return !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrStaleEpoch)
	})
	return err
}

// TestJoinRefusesLiveMember: a join under a live member's id at other addresses, or at
// a live member's raft address under another id, is ErrMemberAlive and leaves that
// member as it was; a join that repeats a member's own addresses (new labels) is taken.
func TestJoinRefusesLiveMember(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	l := leader(t, nodes...)
	var other *Node
	for _, n := range nodes {
		if n != l {
			other = n
			break
		}
	}
	self := other.Self()
	moved := self
	moved.RaftAddr = "127.0.0.1:1"
	if err := onLeader(t, nodes, func(l *Node) error { return l.Join(ctx, moved) }); !errors.Is(err, ErrMemberAlive) {
		t.Fatalf("join of a live member's id at another address: %v, want ErrMemberAlive", err)
	}
	squatter := Member{ID: "squatter", RaftAddr: self.RaftAddr, HTTPAddr: "127.0.0.1:2"}
	if err := onLeader(t, nodes, func(l *Node) error { return l.Join(ctx, squatter) }); !errors.Is(err, ErrMemberAlive) {
		t.Fatalf("join at a live member's raft address: %v, want ErrMemberAlive", err)
	}
	relabel := self
	relabel.Labels = map[string]string{"zone": "b"}
	if err := onLeader(t, nodes, func(l *Node) error { return l.Join(ctx, relabel) }); err != nil {
		t.Fatalf("join with the member's own addresses: %v", err)
	}
	for _, m := range leader(t, nodes...).Members() {
		if m.ID == self.ID && (m.RaftAddr != self.RaftAddr || m.Status != StatusAlive) {
			t.Fatalf("the live member after the refused joins: %+v", m)
		}
		if m.ID == "squatter" {
			t.Fatalf("the refused member was added: %+v", m)
		}
	}
}
