package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestStoreUnknownOutcomeSettles gives up on a write while every replica is held
// before applying it: the outcome is unknown, and the next Read of the sandbox waits
// until the replica has caught up with the leader, so what it shows is final: it
// does not change once every replica has applied everything. (A Read that did not
// wait would show the state before the write, and then the write.)
func TestStoreUnknownOutcomeSettles(t *testing.T) {
	t.Parallel()
	nodes, gates := gated(t)
	f, sb := followerOwner(t, nodes)
	for _, g := range gates {
		g.shut()
	}
	b := put(sb, "k", "committed")
	b.Epoch = f.Epoch(sb)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := f.Write(ctx, b)
	cancel()
	if !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("write with every replica held: %v, want an unknown outcome", err)
	}
	settledRead(t, nodes, gates, f, sb)
}

// settledRead reads sb on f while the gates are shut, opens them, and checks that
// the value f's Read returned is the one every replica ends up with.
func settledRead(t *testing.T, nodes []*Node, gates []*gate, f *Node, sb string) {
	t.Helper()
	got := make(chan string, 1)
	go func() { got <- get(t, f, sb, "k") }()
	time.Sleep(100 * time.Millisecond) // room for a Read that does not wait to return early
	for _, g := range gates {
		g.open()
	}
	v := <-got
	caughtUp(t, nodes...)
	for _, n := range nodes {
		if final := get(t, n, sb, "k"); final != v {
			t.Fatalf("the read after an unknown outcome showed %q, but %s ends with %q", v, n.ID(), final)
		}
	}
	t.Logf("the unknown outcome settled as %q", v)
}

// TestStoreUnknownOutcomeQueued gives up on a write still queued in its node's
// committer, behind groups held at the leader: the next Read waits until the write
// has left the committer, and then for the replica, so what it shows is final.
func TestStoreUnknownOutcomeQueued(t *testing.T) {
	t.Parallel()
	nodes, gates := gated(t)
	f, _ := followerOwner(t, nodes)
	sbs := ownedUpTo(f, 3)
	if len(sbs) < 3 {
		t.Skip("the follower owns too few sample sandboxes")
	}
	for _, g := range gates {
		g.shut()
	}
	var wg sync.WaitGroup
	for i := range maxInFlight { // fill every slot with a group held at the leader
		wg.Go(func() {
			b := put(sbs[i], "k", "v")
			b.Epoch = f.Epoch(sbs[i])
			if err := writeIdempotent(f, b); err != nil {
				t.Errorf("held write %d: %v", i, err)
			}
		})
		waitFor(t, "a group in flight", func() bool { return len(f.commits.slots) == i+1 })
	}
	b := put(sbs[2], "k", "queued")
	b.Epoch = f.Epoch(sbs[2])
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := f.Write(ctx, b)
	cancel()
	if !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("write behind held groups: %v, want an unknown outcome", err)
	}
	settledRead(t, nodes, gates, f, sbs[2])
	wg.Wait()
}

// TestStoreLeaderClosedDuringWrites writes through a follower owner while the leader
// is closed, and checks each write's outcome on both survivors: an acknowledged
// write is on both, a write refused for certain (no leader took it, or fenced) is on
// neither, and a write with an unknown outcome reads the same on both once settled.
func TestStoreLeaderClosedDuringWrites(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3)
	// A spurious election between the two lookups could make the writer the leader
	// that is closed: look again until they are two nodes.
	var f, l *Node
	waitFor(t, "a follower owner apart from the leader", func() bool {
		f, _ = followerOwner(t, nodes)
		l = leader(t, nodes...)
		return f != l
	})
	sbs := ownedUpTo(f, 8)
	type outcome struct {
		sb, key string
		err     error
	}
	var mu sync.Mutex
	var outs []outcome
	var wg sync.WaitGroup
	const before, after = 20, 30
	started := make(chan struct{}, len(sbs))
	closed := make(chan struct{})
	for w, sb := range sbs {
		wg.Go(func() {
			for i := range before + after {
				if i == before {
					started <- struct{}{}
					<-closed
				}
				key := fmt.Sprintf("w%d-%03d", w, i)
				b := put(sb, key, "v")
				b.Epoch = f.Epoch(sb)
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				err := f.Write(ctx, b)
				cancel()
				mu.Lock()
				outs = append(outs, outcome{sb, key, err})
				mu.Unlock()
			}
		})
	}
	for range sbs {
		<-started
	}
	go func() { // the writers go on while the leader closes
		time.Sleep(20 * time.Millisecond)
		close(closed)
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var survivors []*Node
	for _, n := range nodes {
		if n != l {
			survivors = append(survivors, n)
		}
	}
	caughtUp(t, survivors...)
	counts := map[string]int{}
	for _, o := range outs {
		a, b := get(t, survivors[0], o.sb, o.key), get(t, survivors[1], o.sb, o.key)
		switch {
		case o.err == nil:
			counts["acknowledged"]++
			if a != "v" || b != "v" {
				t.Errorf("acknowledged %s/%s: %q on %s, %q on %s", o.sb, o.key, a, survivors[0].ID(), b, survivors[1].ID())
			}
		case errors.Is(o.err, ErrIndeterminate):
			counts["unknown"]++
			if a != b {
				t.Errorf("unknown outcome %s/%s settled differently: %q on %s, %q on %s", o.sb, o.key, a, survivors[0].ID(), b, survivors[1].ID())
			}
		case errors.Is(o.err, ErrNotLeader), errors.Is(o.err, ErrFenced):
			counts["refused"]++
			if a != "<nil>" || b != "<nil>" {
				t.Errorf("refused %s/%s (%v) is there: %q, %q", o.sb, o.key, o.err, a, b)
			}
		default:
			t.Errorf("%s/%s: unexpected error %v", o.sb, o.key, o.err)
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts["acknowledged"] < len(sbs)*before {
		t.Errorf("only %d writes acknowledged", counts["acknowledged"])
	}
}
