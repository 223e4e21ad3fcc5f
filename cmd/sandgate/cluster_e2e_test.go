package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeJoinThree starts three `sandgate serve` processes, the second joining
// through the first and the third through the second (a follower, which forwards
// the join to the leader), and checks /v1/cluster and `sandgate cluster` on each.
func TestServeJoinThree(t *testing.T) {
	t.Parallel()
	const tok = "e2e-cluster-token"
	began := time.Now()
	n1 := startNode(t, tok, "--node-id", "c1")
	t.Logf("c1 bootstrapped in %v", time.Since(began))
	began = time.Now()
	n2 := startNode(t, tok, "--node-id", "c2", "--join", n1.addr)
	t.Logf("c2 joined through c1 in %v", time.Since(began))
	began = time.Now()
	n3 := startNode(t, tok, "--node-id", "c3", "--join", "http://"+n2.addr)
	t.Logf("c3 joined through c2 in %v", time.Since(began))
	began = time.Now()
	nodes := []*node{n1, n2, n3}

	type member struct {
		ID, Status string
		Voter      bool
	}
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, leader := true, ""
		for _, n := range nodes {
			status, body := n.request(t, tok, "GET", "/v1/cluster", "")
			var v struct {
				Leader  string
				Members []member
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
				ok, last = false, body
				break
			}
			voters := 0
			for _, m := range v.Members {
				if m.Status == "alive" && m.Voter {
					voters++
				}
			}
			if v.Leader == "" || (leader != "" && v.Leader != leader) || len(v.Members) != 3 || voters != 3 {
				ok, last = false, body
				break
			}
			leader = v.Leader
		}
		if ok {
			t.Logf("three voters seen by every node %v after c3 started", time.Since(began))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 3-node cluster within 60s; last view: %s\nlogs of c3: %s", last, n3.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range nodes {
		out, errOut, code := n.cli(t, tok, "cluster")
		if code != 0 || !strings.Contains(out, "c1") || !strings.Contains(out, "c2") || !strings.Contains(out, "c3") || strings.Count(out, "leader") != 2 {
			t.Errorf("sandgate cluster at %s: %d\n%s%s", n.addr, code, out, errOut)
		}
	}
}
