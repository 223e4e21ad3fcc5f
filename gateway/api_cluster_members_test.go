package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// tokOnlyN2 is configured on node n2 of the test clusters only.
const tokOnlyN2 = "only-on-n2-token"

// TestClusterThreeNodes starts three gateways, n2 joining through n1 and n3 through
// n2 (forwarded to the leader), then checks membership, tokens and metrics on every
// node, the membership routes, and a restart that resumes without Join.
func TestClusterThreeNodes(t *testing.T) {
	t.Parallel()
	tc := newTestClusterWith(t, 3, func(i int, c *Config) {
		if i == 2 {
			c.Tokens = testTokens()
			c.Tokens[tokOnlyN2] = Principal{Tenant: "bee"}
		}
	})

	t.Run("tokens work on every node", func(t *testing.T) {
		for _, ts := range tc.nodes {
			for tok, tenant := range map[string]string{tokOnlyN2: "bee", tokAcme: "acme"} {
				var who whoamiJSON
				eventually(t, clusterPatience, "the token on "+ts.srv.cfg.NodeID, func() bool {
					return ts.doToken(tok, "GET", "/v1/whoami", nil).status == http.StatusOK
				})
				ts.doToken(tok, "GET", "/v1/whoami", nil).want(t, http.StatusOK).json(t, &who)
				if who.Tenant != tenant || who.Admin {
					t.Errorf("%s: %s speaks for %+v, want tenant %s", ts.srv.cfg.NodeID, tok, who, tenant)
				}
			}
			ts.doToken("not-a-token", "GET", "/v1/whoami", nil).want(t, http.StatusUnauthorized)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		// An election under load may leave a moment with no leader or a lease being
		// renewed: the gauges are read again until they agree, within a bound.
		var problems []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			problems = clusterMetricProblems(t, tc)
			if len(problems) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, p := range problems {
			t.Error(p)
		}
	})

	t.Run("membership routes", func(t *testing.T) {
		f := tc.follower()
		ghost := map[string]any{"id": "ghost", "raft_addr": "127.0.0.1:9", "http_addr": "127.0.0.1:9"}
		for _, tok := range []string{testToken, tokAcme, tokOnlyN2} {
			f.raw(tok, "POST", "/v1/cluster/join", ghost, nil, false).want(t, http.StatusForbidden)
			f.raw(tok, "DELETE", "/v1/cluster/members/n3", nil, nil, false).want(t, http.StatusForbidden)
		}
		for _, bad := range []any{map[string]any{"nope": 1}, map[string]any{"id": "x"}, "{"} {
			r := f.doToken(testAdminToken, "POST", "/v1/cluster/join", bad)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
				t.Errorf("join %v: %d %s, want 400", bad, r.status, r.body)
			}
		}
		f.raw(testAdminToken, "DELETE", "/v1/cluster/members/nobody", nil, nil, false).want(t, http.StatusNotFound)

		// A member added and removed through a follower: only the leader can, so the
		// follower forwarded both. It never heartbeats, so it stays a non-voter.
		var v clusterView
		f.raw(testAdminToken, "POST", "/v1/cluster/join", ghost, nil, false).want(t, http.StatusOK).json(t, &v)
		i := slices.IndexFunc(v.Members, func(m clusterMemberJSON) bool { return m.ID == "ghost" })
		if i < 0 || v.Members[i].Status != "alive" || v.Members[i].Voter {
			t.Fatalf("after the join through %s: %+v", f.srv.cfg.NodeID, v)
		}
		f.raw(testAdminToken, "DELETE", "/v1/cluster/members/ghost", nil, nil, false).want(t, http.StatusNoContent)
		// Again: idempotent, so a removal retried after a leader change succeeds.
		f.raw(testAdminToken, "DELETE", "/v1/cluster/members/ghost", nil, nil, false).want(t, http.StatusNoContent)
		eventually(t, clusterPatience, "ghost to leave", func() bool {
			v, err := f.view()
			if err != nil {
				return false
			}
			return !slices.ContainsFunc(v.Members, func(m clusterMemberJSON) bool { return m.ID == "ghost" })
		})
	})

	t.Run("a live member's id at other addresses is refused", func(t *testing.T) {
		l := tc.leader()
		victim := tc.nodes[1].srv.cfg.NodeID
		impostor := map[string]any{"id": victim, "raft_addr": "127.0.0.1:1", "http_addr": "127.0.0.1:2"}
		r := l.raw(testAdminToken, "POST", "/v1/cluster/join", impostor, nil, false)
		if r.status != http.StatusConflict || r.errorCode(t) != codeConflict {
			t.Fatalf("join as the live %s elsewhere: %d %s, want 409 conflict", victim, r.status, r.body)
		}
		v, err := l.view()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(v.Members, func(m clusterMemberJSON) bool { return m.ID == victim })
		if i < 0 || v.Members[i].Status != "alive" || v.Members[i].RaftAddr == "127.0.0.1:1" {
			t.Fatalf("%s after the refused join: %+v", victim, v.Members)
		}
	})

	t.Run("restart resumes without join", func(t *testing.T) {
		ts := tc.restart(t, 3)
		if ts.srv.cfg.Join != "" {
			t.Fatal("restarted with Join")
		}
		waitAlive(t, tc, 3)
	})

	t.Run("remove a node", func(t *testing.T) {
		l := tc.leader()
		victim := tc.nodes[2]
		if victim == l {
			victim = tc.nodes[1]
		}
		id := victim.srv.cfg.NodeID
		l.raw(testAdminToken, "DELETE", "/v1/cluster/members/"+id, nil, nil, false).want(t, http.StatusNoContent)
		eventually(t, clusterPatience, id+" to leave the raft configuration", func() bool {
			v, err := l.view()
			if err != nil {
				return false
			}
			return !slices.ContainsFunc(v.Members, func(m clusterMemberJSON) bool { return m.ID == id })
		})
	})
}

// waitAlive waits until every node sees the three test nodes alive and voters.
func waitAlive(t *testing.T, tc *testCluster, n int) {
	t.Helper()
	eventually(t, clusterPatience, "every node alive, voters, one leader", func() bool {
		leader := ""
		for _, ts := range tc.nodes {
			v, err := ts.view()
			if err != nil || v.Leader == "" || (leader != "" && v.Leader != leader) {
				return false
			}
			leader = v.Leader
			ok := 0
			for _, m := range v.Members {
				if m.Status == "alive" && m.Voter {
					ok++
				}
			}
			if ok != n {
				return false
			}
			if valid, _ := ts.srv.cluster.Lease(); !valid {
				return false
			}
		}
		return true
	})
}

// TestClusterJoinRefused: a node whose admin token the seed does not accept fails
// to start, with an error naming the seed; so does one pointed at nothing.
func TestClusterJoinRefused(t *testing.T) {
	t.Parallel()
	seed := newTestServer(t, nil)
	tests := []struct {
		name, join string
		tokens     map[string]Principal
		want       string // in the error
	}{
		{"token not accepted", seed.addr(), map[string]Principal{"stranger": {Tenant: "x", Admin: true}}, "401"},
		{"tenant token", "http://" + seed.addr(), map[string]Principal{testToken: {Tenant: "x", Admin: true}}, "403"},
		{"no admin token", seed.addr(), map[string]Principal{"tenant-only": {Tenant: "x"}}, "needs an admin token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{
				Listen: "127.0.0.1:0", DataDir: t.TempDir(), Tokens: tt.tokens, NodeID: "joiner",
				Join: tt.join, RaftMultiplier: 0.1, Logger: seed.srv.log,
			}
			began := time.Now()
			srv, err := New(t.Context(), cfg)
			if err == nil {
				_ = srv.Shutdown(t.Context())
				t.Fatal("New joined")
			}
			if !strings.Contains(err.Error(), tt.want) || (tt.want != "needs an admin token" && !strings.Contains(err.Error(), seed.addr())) {
				t.Fatalf("error %q does not name the seed or say %q", err, tt.want)
			}
			if d := time.Since(began); d > joinTimeout/2 {
				t.Errorf("a final refusal took %v: retried as if transient", d)
			}
		})
	}
}

// clusterMetricProblems scrapes every node of tc once and says what the cluster
// gauges get wrong: exactly one leader, three live members, a term, an applied
// index and a valid lease on each node, no rejected node connections.
func clusterMetricProblems(t *testing.T, tc *testCluster) []string {
	t.Helper()
	var problems []string
	leaders := 0
	for _, ts := range tc.nodes {
		mfs, _ := scrape(t, ts.client, ts.url+"/metrics", testToken)
		val := func(name, status string) float64 {
			mf := mfs[name]
			if mf == nil {
				t.Fatalf("%s: no %s", ts.srv.cfg.NodeID, name)
			}
			for _, m := range mf.GetMetric() {
				lbl := ""
				for _, l := range m.GetLabel() {
					lbl = l.GetValue()
				}
				if lbl == status {
					if m.GetGauge() != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
			t.Fatalf("%s: no %s{%q}", ts.srv.cfg.NodeID, name, status)
			return 0
		}
		id := ts.srv.cfg.NodeID
		leaders += int(val("sandgate_raft_leader", ""))
		if val("sandgate_cluster_members", "alive") != 3 || val("sandgate_cluster_members", "left") != 0 {
			problems = append(problems, fmt.Sprintf("%s: members gauge wrong", id))
		}
		if val("sandgate_raft_term", "") < 1 || val("sandgate_raft_applied_index", "") < 1 {
			problems = append(problems, fmt.Sprintf("%s: raft term or applied index is 0", id))
		}
		if val("sandgate_cluster_lease_valid", "") != 1 || val("sandgate_cluster_lease_remaining_seconds", "") <= 0 {
			problems = append(problems, fmt.Sprintf("%s: no lease in the metrics", id))
		}
		if val("sandgate_cluster_rejected_node_connections_total", "") != 0 {
			problems = append(problems, fmt.Sprintf("%s: rejected node connections", id))
		}
	}
	if leaders != 1 {
		problems = append(problems, fmt.Sprintf("%d nodes report they lead", leaders))
	}
	return problems
}
