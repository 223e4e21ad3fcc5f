package clustertest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// The client workload of the failover scenario against one node that is stopped
// (SIGKILL, or SIGTERM) and started again on its data: every acknowledged write
// survives, and the whole history (session env and cwd, event log, message queue,
// event stream) is linearizable.
func TestLinearizableAcrossRestart(t *testing.T) {
	tests := []struct {
		name string
		stop func(*clustertest.Node, *testing.T)
	}{
		{"SIGKILL", func(n *clustertest.Node, t *testing.T) { n.Kill(t) }},
		{"SIGTERM", func(n *clustertest.Node, t *testing.T) { n.Stop(t) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startOne(t)
			n := c.Nodes[0]
			cl := setup(t, c, n, n, "lin1")
			stop := cl.follow()
			defer stop()
			cl.startPhase(t, 10, 2*time.Minute).wait(t)

			p := cl.startPhase(t, 20, 3*time.Minute)
			tc.stop(n, t)
			stopped := time.Now()
			n.Restart(t)
			waitSandbox(t, cl, "", 60*time.Second)
			t.Logf("stopped and restarted: the sandbox answered again after %v", time.Since(stopped).Round(time.Millisecond))
			p.wait(t)

			stop()
			cl.drain(t)
			cl.check(t)
		})
	}
}

// The failover scenario on three nodes: create through A, work through B and C, kill
// the owner with SIGKILL; the sandbox answers on a survivor with its session, events
// and messages, and a sandbox.moved event; then kill the leader, and control writes
// resume. Every client operation is checked for linearizability.
func TestFailover(t *testing.T) {
	c := clustertest.Start(t, &clustertest.Config{Nodes: 3})
	a, b := c.Nodes[0], c.Nodes[1]
	cl := setup(t, c, a, b, "fail1")
	stop := cl.follow()
	defer stop()
	cl.startPhase(t, 10, 2*time.Minute).wait(t)

	// Kill the sandbox's owner.
	owner := c.Node(sandboxNode(t, cl))
	if owner == nil {
		t.Fatalf("the sandbox's node is not one of %v", c.Nodes)
	}
	// An owner that also leads costs an election more, and the new leader waits out
	// every lease it may not know of (L + δ from its election) before it moves any
	// partition.
	killOwnerUnderLoad(t, c, cl, owner)

	// Bring the old owner back, then kill the leader: control writes resume.
	owner.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitMembers(ctx, owner, 3); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx, c.Running()[0])
	if err != nil || c.Node(info.Leader) == nil {
		t.Fatalf("no leader: %+v %v", info, err)
	}
	leader := c.Node(info.Leader)
	p := cl.startPhase(t, 20, 3*time.Minute)
	leader.Kill(t)
	killed := time.Now()
	waitControlWrite(t, cl, 60*time.Second)
	t.Logf("leader %s killed: control writes resumed after %v", leader.ID, time.Since(killed).Round(time.Millisecond))
	p.wait(t)

	stop()
	cl.drain(t)
	cl.check(t)
}

// Every node restarted in turn (SIGTERM, then the same id, ports and data) under
// load: no request gets a wrong answer and the history stays linearizable.
func TestRollingRestart(t *testing.T) {
	c := clustertest.Start(t, &clustertest.Config{Nodes: 3})
	cl := setup(t, c, c.Nodes[0], c.Nodes[1], "roll1")
	stop := cl.follow()
	defer stop()
	p := cl.startPhase(t, 30, 5*time.Minute)
	for _, n := range c.Nodes {
		n.Restart(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := c.WaitMembers(ctx, n, 3)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	p.wait(t)
	stop()
	cl.drain(t)
	cl.check(t)
}

// startOne starts one node for the workload.
func startOne(t *testing.T) *clustertest.Cluster {
	return clustertest.Start(t, &clustertest.Config{Nodes: 1})
}

// sandboxNode returns the "node" of the client's sandbox, as a running node says.
func sandboxNode(t *testing.T, cl *client) string {
	t.Helper()
	var sb struct{ Node string }
	resp, o := cl.do(cl.node(), "GET", "/v1/sandboxes/"+cl.sb, nil, http.StatusOK)
	if o != done || json.Unmarshal(resp.Body, &sb) != nil || sb.Node == "" {
		t.Fatalf("failed to get the sandbox's node: %v", resp)
	}
	return sb.Node
}

// waitSandbox waits until a running node answers for the sandbox from a node other
// than not (any node when not is ""), and returns that node's id. It asks again after
// each failed answer: a killed owner's sandboxes have no event to wait on.
func waitSandbox(t *testing.T, cl *client, not string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		n := cl.node()
		if n == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		resp, err := n.Do(ctx, "GET", "/v1/sandboxes/"+cl.sb, nil)
		cancel()
		var sb struct{ Node string }
		if err == nil && resp.JSON(http.StatusOK, &sb) == nil && sb.Node != not {
			return sb.Node
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sandbox %s did not answer within %v", cl.sb, limit)
	return ""
}

// checkMoved fails t unless the event log holds a sandbox.moved event from the killed
// owner to the new one.
func checkMoved(t *testing.T, cl *client, from, to string) {
	t.Helper()
	for _, e := range cl.read(cl.node(), 0) {
		var d struct{ From, To string }
		if e.Type == "sandbox.moved" && json.Unmarshal(e.Data, &d) == nil && d.From == from && d.To == to {
			return
		}
	}
	t.Errorf("no sandbox.moved event from %s to %s", from, to)
}

// killOwnerUnderLoad kills owner, the sandbox's node, with SIGKILL while 20 more operations
// run, waits for the sandbox to answer on another node, logs how long that took, and
// checks the sandbox.moved event.
func killOwnerUnderLoad(t *testing.T, c *clustertest.Cluster, cl *client, owner *clustertest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	before, err := c.Info(ctx, owner)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	p := cl.startPhase(t, 20, 3*time.Minute)
	owner.Kill(t)
	killed := time.Now()
	moved := waitSandbox(t, cl, owner.ID, 60*time.Second)
	t.Logf("owner %s (leader at the kill: %v) killed: the sandbox answered on %s after %v",
		owner.ID, before.Leader == owner.ID, moved, time.Since(killed).Round(time.Millisecond))
	p.wait(t)
	checkMoved(t, cl, owner.ID, moved)
}

// waitControlWrite creates sandboxes through running nodes until one create succeeds.
func waitControlWrite(t *testing.T, cl *client, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		// A control-plane write that needs the leader and no sandbox's owner: one
		// more token hash in the cluster's replicated token table.
		sum := sha256.Sum256([]byte(cl.token("ctl")))
		body := map[string]any{"tokens": []map[string]any{{"sha256": hex.EncodeToString(sum[:]), "tenant": "ctl"}}}
		resp, err := cl.node().Do(ctx, "POST", "/v1/cluster/tokens", body)
		cancel()
		if err == nil && resp.Status < 300 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no control write succeeded within %v of the leader's death", limit)
}
