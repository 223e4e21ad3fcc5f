package gateway

import (
	"fmt"
	"net/http"
	"testing"
)

// TestDeletedPoolSandboxDropsPin: n1 and n2 are in zone a, n3 in zone b. A sandbox
// created in the pool zone=b (pinned to n3) and then deleted leaves no pin on any
// node, as /v1/cluster shows them; created again with the same id and no pool, it
// lands on its owner by hash, not on n3.
func TestDeletedPoolSandboxDropsPin(t *testing.T) {
	tc := newTestClusterWith(t, 3, func(i int, c *Config) {
		c.Policy = zonePolicy{}
		c.Labels = map[string]string{"zone": "a"}
		if i == 3 {
			c.Labels = map[string]string{"zone": "b"}
		}
	})
	n1, n2, n3 := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	// An id whose owner by hash is not n3, so a stale pin would show.
	id := ""
	for i := 0; id == ""; i++ {
		c := fmt.Sprintf("pindel-%d", i)
		if owner, _, ok := n1.srv.cluster.Owner(c); ok && owner != "n3" {
			id = c
		}
	}
	pins := func(ts *testServer) map[string]int {
		var info clusterJSON
		ts.must(http.StatusOK, "GET", "/v1/cluster", nil).json(t, &info)
		out := map[string]int{}
		for _, m := range info.Members {
			out[m.ID] = m.Pins
		}
		return out
	}

	var info sandboxJSON
	n2.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": id, "labels": map[string]string{"want": "b"}}).json(t, &info)
	if info.Node != "n3" {
		t.Fatalf("created on %q, want n3", info.Node)
	}
	for _, ts := range tc.nodes {
		eventually(t, clusterPatience, "the pin on "+ts.srv.cfg.NodeID, func() bool { return pins(ts)["n3"] == 1 })
	}

	n1.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/"+id, nil)
	for _, ts := range tc.nodes {
		eventually(t, clusterPatience, "no pin on "+ts.srv.cfg.NodeID, func() bool {
			for _, n := range pins(ts) {
				if n != 0 {
					return false
				}
			}
			return true
		})
	}

	owner, _, _ := n1.srv.cluster.Owner(id)
	n3.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": id}).json(t, &info)
	if info.Node != string(owner) || info.Node == "n3" || len(info.Pool) != 0 {
		t.Fatalf("re-created: node %q pool %v, want its hash owner %s and no pool", info.Node, info.Pool, owner)
	}
	for _, ts := range tc.nodes {
		if p := pins(ts); p["n3"] != 0 {
			t.Fatalf("%s: pins %v after a create with no pool", ts.srv.cfg.NodeID, p)
		}
	}
}
