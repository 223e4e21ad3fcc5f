package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/cluster"
)

// TestDrainMovesPinnedSandbox: a and b carry pool=x. Two sandboxes are pinned to a:
// one in pool x, one by a selector only a matches. Draining a hands the first to b
// like a partition: its WebSocket (attached through c) closes with 1012, its
// process ends on a and is recorded exited, and its log on b has sandbox.moved
// {"planned": true} from a to b. The second stays on a and still answers; every
// node's GET /v1/cluster lists it as unmovable on a, and a counts as drained.
func TestDrainMovesPinnedSandbox(t *testing.T) {
	tr := newTrio(t, func(i int, c *Config) {
		c.RebalanceRate = 1000
		if i > 0 { // b and a
			c.Labels["pool"] = "x"
		}
	})
	a, b, c := tr.node("a"), tr.node("b"), tr.node("c")
	pool := map[string]string{"pool": "x"}
	var moving string
	for i := 0; moving == ""; i++ {
		sb := "pinmove-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		tr.onLeader(func(l *cluster.Node) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			as, err := l.Pin(ctx, sb, pool)
			if err == nil && as.Owner == "a" {
				moving = sb
			}
			return err
		})
	}
	stuck := "pinstuck"
	tr.pin(stuck, "a")
	eventually(t, clusterPatience, moving+" placed on a everywhere", func() bool {
		for _, n := range tr.nodes {
			if o, _, ok := n.srv.cluster.Owner(moving); !ok || o != "a" {
				return false
			}
		}
		return true
	})
	c.sandbox(moving)
	c.sandbox(stuck)
	mustSetUp(t, c, http.StatusNoContent, "PUT", filesPath(moving)+"?path=kept.txt", "pinned files move\n")
	p, ws := attachDraining(t, c, a, moving)

	risk := watchPlanRisk(a, func(h cluster.Handoff) bool { return slices.Contains(h.Sandboxes, moving) })

	b.doToken(testAdminToken, "POST", "/v1/cluster/members/a/drain", nil).want(t, http.StatusAccepted)
	if st := ws.readUntil(t, clusterPatience, func(*wsClient) bool { return false }); st != websocket.StatusServiceRestart {
		t.Fatalf("websocket closed with %v, want 1012", st)
	}
	eventually(t, clusterPatience, moving+" owned by b everywhere", func() bool {
		for _, n := range tr.nodes {
			if o, _, ok := n.srv.cluster.Owner(moving); !ok || o != "b" {
				return false
			}
		}
		return true
	})
	var got processJSON
	c.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+moving+"/processes/"+p.ID, nil).json(t, &got)
	if got.Status != "exited" {
		t.Errorf("process after the planned move: %q, want exited", got.Status)
	}
	moved := movedData(t, c, moving)
	if len(moved) != 1 || moved[0]["planned"] != true || moved[0]["from"] != "a" || moved[0]["to"] != "b" {
		raw, _ := json.Marshal(moved)
		if len(moved) == 1 && risk.degraded() {
			t.Skipf("sandbox.moved %s: unplanned because a was fenced (%v) or its hook took %v, past the window of %v (a loaded machine)",
				raw, risk.fenced.Load(), risk.took(), risk.window())
		}
		t.Fatalf("sandbox.moved events: %s, want one planned from a to b", raw)
	}

	if lost := lostOf(moved[0]); !slices.Equal(lost, []string{"processes"}) {
		t.Fatalf("sandbox.moved lost %v, want only the processes: the workspace streams with the pin", lost)
	}
	if got := string(c.mustSettled(http.StatusOK, "GET", filesPath(moving)+"?path=kept.txt", nil).body); got != "pinned files move\n" {
		t.Fatalf("kept.txt after the pinned sandbox moved: %q", got)
	}

	// The sandbox no other node matches stays on a, is served, and is reported.
	if o, _, _ := c.srv.cluster.Owner(stuck); o != "a" {
		t.Fatalf("%s moved to %q; no other node matches it", stuck, o)
	}
	var ex execJSON
	c.must(http.StatusOK, "POST", "/v1/sandboxes/"+stuck+"/exec", map[string]any{"command": "echo still"}).json(t, &ex)
	if ex.Stdout != "still\n" {
		t.Fatalf("exec in the unmovable sandbox: %+v", ex)
	}
	for _, n := range tr.nodes {
		eventually(t, clusterPatience, "a drained in "+string(n.srv.cluster.ID())+"'s table", func() bool { return n.srv.cluster.Drained("a") })
		var info clusterJSON
		n.mustSettled(http.StatusOK, "GET", "/v1/cluster", nil).json(t, &info)
		for _, m := range info.Members {
			want := []string{}
			if m.ID == "a" {
				want = []string{stuck}
			}
			if !slices.Equal(m.Unmovable, want) {
				t.Fatalf("%s's view of %s: unmovable %v, want %v", n.srv.cluster.ID(), m.ID, m.Unmovable, want)
			}
			if m.ID == "a" && (m.Pins != 1 || m.Status != "draining" || m.Partitions != 0) {
				t.Fatalf("%s's view of a: %+v, want draining with no partition and one pin", n.srv.cluster.ID(), m)
			}
		}
		// Another tenant is not shown the id of a sandbox it cannot see; an admin is.
		for _, tt := range []struct {
			token string
			want  []string
		}{{tokAcme, []string{}}, {testAdminToken, []string{stuck}}} {
			var info clusterJSON
			n.raw(tt.token, "GET", "/v1/cluster", nil, nil, false).want(t, http.StatusOK).json(t, &info)
			for _, m := range info.Members {
				if m.ID == "a" && !slices.Equal(m.Unmovable, tt.want) {
					t.Fatalf("%s's view of a for %s: unmovable %v, want %v", n.srv.cluster.ID(), tt.token, m.Unmovable, tt.want)
				}
			}
		}
	}
}

// poolDenyPolicy puts a create labelled want=Z in the pool zone=Z, like zonePolicy, and
// on a node with deny set refuses every create.
type poolDenyPolicy struct{ deny bool }

func (p poolDenyPolicy) Route(ctx context.Context, r RouteRequest) RouteDecision {
	if p.deny && r.Route == "POST /v1/sandboxes" {
		return RouteDecision{Allow: false, Status: http.StatusForbidden, Reason: "not on this node"}
	}
	return zonePolicy{}.Route(ctx, r)
}

// TestFailedPoolCreateDropsPin: n3 is the only zone=b node and its policy refuses
// every create. A create through n1 in pool zone=b pins the sandbox to n3, whose
// policy then denies it: the client gets the 403, and the pin is gone from every
// node's table (the sweep is an hour away here, so only the failure path can have
// removed it).
func TestFailedPoolCreateDropsPin(t *testing.T) {
	tc := newTestClusterWith(t, 3, func(i int, c *Config) {
		c.Policy = poolDenyPolicy{}
		c.Labels = map[string]string{"zone": "a"}
		c.OrphanPinGrace = time.Hour
		if i == 3 {
			c.Labels = map[string]string{"zone": "b"}
			c.Policy = poolDenyPolicy{deny: true}
		}
	})
	n1 := tc.nodes[0]
	r := n1.do("POST", "/v1/sandboxes", map[string]any{"id": "denied", "labels": map[string]string{"want": "b"}})
	if r.status != http.StatusForbidden {
		t.Fatalf("create denied on the pinned node: %d %s, want 403", r.status, r.body)
	}
	eventually(t, clusterPatience, "the pin of the denied create gone everywhere", func() bool {
		for _, n := range tc.nodes {
			if _, ok := n.srv.cluster.PinOf("denied"); ok {
				return false
			}
		}
		return true
	})
}
