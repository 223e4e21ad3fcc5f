package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeAdvertise: two `sandgate serve` processes bind HTTP and raft on every
// interface with port 0 and advertise 127.0.0.2 (which reaches them only because
// they listen on all interfaces); the second joins through the first's advertised
// address. Every member in /v1/cluster carries its advertised addresses with the
// real ports, and a sandbox owned by the second node answers exec through the first.
func TestServeAdvertise(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("127.0.0.2 is not a local address here: %v", err)
	} else {
		ln.Close()
	}
	const tok = "e2e-advertise-token"
	start := func(id string, extra ...string) (*node, string) {
		args := append([]string{"--listen", "0.0.0.0:0", "--raft-listen", "0.0.0.0:0", "--advertise", "127.0.0.2",
			"--raft-advertise", "127.0.0.2", "--data", t.TempDir(), "--token", tok, "--node-id", id}, extra...)
		n := launchServe(t, args...)
		_, port, err := net.SplitHostPort(n.addr)
		if err != nil || port == "0" {
			t.Fatalf("%s listens on %q", id, n.addr)
		}
		n.addr = net.JoinHostPort("127.0.0.2", port) // what another machine would dial
		return n, n.addr
	}
	n1, adv1 := start("a1")
	n2, adv2 := start("a2", "--join", adv1)

	type member struct {
		ID         string
		HTTPAddr   string `json:"http_addr"`
		RaftAddr   string `json:"raft_addr"`
		Status     string
		Partitions int
	}
	want := map[string]string{"a1": adv1, "a2": adv2}
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for ok := false; !ok; {
		ok = true
		for _, n := range []*node{n1, n2} {
			status, body := n.request(t, tok, "GET", "/v1/cluster", "")
			var v struct{ Members []member }
			if status != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || len(v.Members) != 2 {
				ok, last = false, body
				break
			}
			for _, m := range v.Members {
				host, port, _ := net.SplitHostPort(m.RaftAddr)
				// a2 needs partitions for the forward below; the rebalance moves 64 a second.
				if m.Status != "alive" || m.HTTPAddr != want[m.ID] || host != "127.0.0.2" || port == "0" || (m.ID == "a2" && m.Partitions < 512) {
					ok, last = false, body
				}
			}
		}
		if !ok && time.Now().After(deadline) {
			t.Fatalf("members not alive at their advertised addresses within 60s; last view: %s\nlog of a2: %s", last, n2.log.String())
		}
		if !ok {
			time.Sleep(100 * time.Millisecond)
		}
	}

	// A sandbox a2 owns, created and used through a1: forwarded to 127.0.0.2.
	owned := ""
	for i := 0; i < 200 && owned == ""; i++ {
		sb := fmt.Sprintf("adv-%d", i)
		status, body := n1.request(t, tok, "POST", "/v1/sandboxes", `{"id": "`+sb+`"}`)
		var info struct{ Node string }
		if status != http.StatusCreated || json.Unmarshal([]byte(body), &info) != nil {
			t.Fatalf("create %s through a1: %d %s", sb, status, body)
		}
		if info.Node == "a2" {
			owned = sb
		}
	}
	if owned == "" {
		t.Fatal("no sandbox of 200 landed on a2")
	}
	status, body := n1.request(t, tok, "POST", "/v1/sandboxes/"+owned+"/exec", `{"command": "echo forwarded"}`)
	if status != http.StatusOK || !strings.Contains(body, `"stdout":"forwarded\n"`) {
		t.Fatalf("exec on a2's sandbox through a1: %d %s", status, body)
	}
}
