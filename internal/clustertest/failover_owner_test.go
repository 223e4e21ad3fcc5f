package clustertest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// TestFailoverFollowerOwner: the owner of a sandbox, a node that does not lead, is
// killed with SIGKILL; the sandbox answers through a survivor once the leader has
// waited out the dead node's lease (L + δ = 3.5 s at the defaults), with the events
// it had. The time is logged: it is the figure of an owner's death alone.
func TestFailoverFollowerOwner(t *testing.T) {
	c := clustertest.Start(t, &clustertest.Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := c.Info(ctx, c.Nodes[0])
	if err != nil || info.Leader == "" {
		t.Fatalf("no leader: %+v %v", info, err)
	}
	// A sandbox some follower owns: the leader rebalances partitions onto the nodes
	// that joined, so a few tries find one.
	sb, owner := c.CreateWhere(ctx, t, "fo", func(node string) bool { return node != info.Leader })
	resp, err := owner.Do(ctx, "POST", "/v1/sandboxes/"+sb+"/events", map[string]any{"type": "agent.note", "data": map[string]string{"k": "kept"}})
	if err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("post event: %v %+v", err, resp)
	}
	survivor := c.Node(info.Leader)
	owner.Kill(t)
	killed := time.Now()
	for {
		if ctx.Err() != nil {
			t.Fatalf("sandbox %s did not answer after its owner %s died", sb, owner.ID)
		}
		var got struct{ Node string }
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := survivor.Do(rctx, "GET", "/v1/sandboxes/"+sb, nil)
		rcancel()
		if err == nil && resp.JSON(http.StatusOK, &got) == nil && got.Node != owner.ID {
			t.Logf("owner %s (not the leader) killed: sandbox %s answered on %s after %v", owner.ID, sb, got.Node, time.Since(killed).Round(time.Millisecond))
			break
		}
		time.Sleep(20 * time.Millisecond) // a killed node's sandboxes have no event to wait on
	}
	var evs struct {
		Events []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	resp, err = survivor.Do(ctx, "GET", "/v1/sandboxes/"+sb+"/events", nil)
	if err != nil || resp.JSON(http.StatusOK, &evs) != nil {
		t.Fatalf("events: %v %+v", err, resp)
	}
	found := false
	for _, e := range evs.Events {
		found = found || (e.Type == "agent.note" && e.Data["k"] == "kept")
	}
	if !found {
		t.Fatalf("the event posted before the kill is gone: %+v", evs.Events)
	}
}

// TestFailoverLeaderOwner: the owner of a sandbox is also the raft leader and is
// killed with SIGKILL under the client workload. The sandbox answers through a
// survivor (the new leader counts the dead one's lease from its last lease entry in
// the log, not from its own election), with a sandbox.moved event, and the whole
// history stays linearizable: no acknowledged write lost, no read back in time, which
// two owners running the sandbox at once would break. The time is logged; the bound
// asserted is generous.
func TestFailoverLeaderOwner(t *testing.T) {
	c := clustertest.Start(t, &clustertest.Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := c.Info(ctx, c.Nodes[0])
	if err != nil || c.Node(info.Leader) == nil {
		t.Fatalf("no leader: %+v %v", info, err)
	}
	sb, owner := c.CreateWhere(ctx, t, "lo", func(node string) bool { return node == info.Leader })
	var other *clustertest.Node
	for _, n := range c.Nodes {
		if n != owner {
			other = n
			break
		}
	}
	cl := adopt(t, c, other, sb)
	stop := cl.follow()
	defer stop()
	cl.startPhase(t, 10, 2*time.Minute).wait(t)

	killOwnerUnderLoad(t, c, cl, owner)
	stop()
	cl.drain(t)
	cl.check(t)
}
