package gateway

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// clusterInfoView is GET /v1/cluster as a client decodes it: pointers where the test
// must tell a missing field from a zero one.
type clusterInfoView struct {
	Node    string  `json:"node"`
	Leader  *string `json:"leader"`
	Members []struct {
		ID         string            `json:"id"`
		RaftAddr   string            `json:"raft_addr"`
		HTTPAddr   string            `json:"http_addr"`
		Labels     map[string]string `json:"labels"`
		Status     string            `json:"status"`
		Voter      *bool             `json:"voter"`
		Partitions *int              `json:"partitions"`
	} `json:"members"`
	Term         uint64  `json:"term"`
	Partitions   *int    `json:"partitions"`
	Unassigned   *int    `json:"unassigned"`
	AppliedIndex *uint64 `json:"applied_index"`
	Lease        *struct {
		Valid bool       `json:"valid"`
		Until *time.Time `json:"until"`
	} `json:"lease"`
}

func (ts *testServer) clusterInfoView(t testing.TB) clusterInfoView {
	t.Helper()
	var v clusterInfoView
	ts.must(http.StatusOK, "GET", "/v1/cluster", nil).json(t, &v)
	if v.Partitions == nil || v.Unassigned == nil || v.AppliedIndex == nil || v.Lease == nil {
		t.Fatalf("GET /v1/cluster lacks partitions, unassigned, applied_index or lease: %+v", v)
	}
	for _, m := range v.Members {
		if m.Voter == nil || m.Partitions == nil || m.Labels == nil {
			t.Fatalf("member %s lacks voter, partitions or labels: %+v", m.ID, m)
		}
	}
	return v
}

// check reports what is wrong with v as a settled view of a cluster of want, all
// alive voters, answered by node, with every partition owned; "" if nothing.
func (v clusterInfoView) check(node string, want ...string) string {
	switch {
	case v.Node != node:
		return fmt.Sprintf("node %q, want %q", v.Node, node)
	case v.Leader == nil:
		return "no leader"
	case *v.Partitions != cluster.Partitions || *v.Unassigned != 0:
		return fmt.Sprintf("partitions %d, unassigned %d", *v.Partitions, *v.Unassigned)
	case !v.Lease.Valid || v.Lease.Until == nil:
		return fmt.Sprintf("lease %+v", *v.Lease)
	case len(v.Members) != len(want):
		return fmt.Sprintf("%d members, want %d", len(v.Members), len(want))
	case v.Term == 0 || *v.AppliedIndex == 0:
		return fmt.Sprintf("term %d, applied index %d", v.Term, *v.AppliedIndex)
	}
	total := 0
	for i, m := range v.Members {
		if m.ID != want[i] || m.Status != "alive" || !*m.Voter || *m.Partitions == 0 || m.RaftAddr == "" || m.HTTPAddr == "" {
			return fmt.Sprintf("member %d: %+v (voter %v, partitions %d), want %s alive, a voter, owning some", i, m, *m.Voter, *m.Partitions, want[i])
		}
		total += *m.Partitions
	}
	if total != cluster.Partitions {
		return fmt.Sprintf("members own %d partitions in all, want %d", total, cluster.Partitions)
	}
	return ""
}

func TestClusterInfo(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	v := ts.clusterInfoView(t)
	if msg := v.check("n1", "n1"); msg != "" {
		t.Fatal(msg)
	}
	if *v.Leader != "n1" || *v.Members[0].Partitions != cluster.Partitions {
		t.Fatalf("one node: leader %q, owning %d", *v.Leader, *v.Members[0].Partitions)
	}
	if v.Members[0].HTTPAddr != ts.srv.cfg.Listen || v.Members[0].RaftAddr != ts.srv.cluster.RaftAddr() {
		t.Fatalf("addresses: %+v", v.Members[0])
	}
}

// TestClusterInfoTwoNodes: a second real server joins the first (Config.Join, the
// join route); both answer GET /v1/cluster with both members
// as voters sharing every partition, and a sandbox created on each shows its owner
// as its node.
func TestClusterInfoTwoNodes(t *testing.T) {
	t.Parallel()
	ts1 := newTestServer(t, nil)
	// Before the join every partition is n1's: a sandbox made now is owned, and run,
	// by n1.
	var sb sandboxJSON
	ts1.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "on-n1"}).json(t, &sb)
	if owner, _, _ := ts1.srv.cluster.Owner("on-n1"); sb.Node != "n1" || owner != "n1" {
		t.Fatalf("sandbox node %q, owner %q; want n1", sb.Node, owner)
	}

	ts2 := newTestServer(t, &serverOptions{config: func(c *Config) {
		c.NodeID = "n2"
		c.Join = ts1.url
	}})
	// Partitions move to n2 at the rebalance rate; once it owns some, both views
	// must be settled and agree on who is in.
	var msg string
	eventually(t, time.Minute, "both nodes to show two alive voters sharing the partitions", func() bool {
		msg = ts1.clusterInfoView(t).check("n1", "n1", "n2")
		if msg == "" {
			msg = ts2.clusterInfoView(t).check("n2", "n1", "n2")
		}
		return msg == ""
	})

	// An id n2 owns in its own table (rebalancing moves partitions only onto n2
	// here, so it stays n2's).
	id := ""
	for i := 0; id == ""; i++ {
		c := fmt.Sprintf("sb-%d", i)
		if o, _, ok := ts2.srv.cluster.Owner(c); ok && o == "n2" {
			id = c
		}
	}
	// A loaded machine may let n2's lease lapse for a moment (503): retry then.
	eventually(t, time.Minute, "n2 to create "+id, func() bool {
		r := ts2.do("POST", "/v1/sandboxes", map[string]any{"id": id})
		switch r.status {
		case http.StatusServiceUnavailable:
			return false
		case http.StatusCreated, http.StatusOK:
			r.json(t, &sb)
			return true
		}
		t.Fatalf("create %s on n2: %d %s", id, r.status, r.body)
		return false
	})
	if sb.Node != "n2" {
		t.Fatalf("sandbox %s owned by n2 shows node %q", id, sb.Node)
	}
}
