package clustertest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// reqCtx bounds one request of these tests.
func reqCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must sends a request that must answer want, and decodes the body into v.
func must(t *testing.T, n *Node, method, path string, body any, want int, v any) {
	t.Helper()
	resp, err := n.Do(reqCtx(t), method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.JSON(want, v); err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.ID, err)
	}
}

func TestSingleNode(t *testing.T) {
	c := Start(t, &Config{Nodes: 1})
	n := c.Nodes[0]
	if n.ID != "n1" || !n.Running() || n.PID() == 0 || c.Node("n1") != n || c.Node("n2") != nil {
		t.Fatalf("node %+v running=%t pid=%d", n, n.Running(), n.PID())
	}
	info, err := c.Info(reqCtx(t), n)
	if err != nil || info.Node != "n1" || info.Leader != "n1" || len(info.Members) != 1 ||
		info.Members[0].HTTPAddr != n.HTTPAddr || info.Members[0].RaftAddr != n.RaftAddr {
		t.Fatalf("cluster info %+v %v", info, err)
	}
	if err := c.WaitMembers(reqCtx(t), n, 1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := c.WaitMembers(short, n, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitMembers for 2 of 1 = %v", err)
	}
	must(t, n, "POST", "/v1/sandboxes", map[string]string{"id": "keep"}, http.StatusCreated, nil)
	var posted struct{ Seq uint64 }
	must(t, n, "POST", "/v1/sandboxes/keep/events", map[string]any{"type": "agent.note", "data": map[string]string{"k": "before-kill"}}, http.StatusCreated, &posted)

	// SIGKILL, then a restart on the same data: what was acknowledged is there.
	n.Kill(t)
	if n.Running() || n.PID() != 0 || len(c.Running()) != 0 {
		t.Fatal("node still running after Kill")
	}
	if _, err := n.Do(reqCtx(t), "GET", "/healthz", nil); err == nil {
		t.Fatal("a killed node answered")
	}
	n.Restart(t)
	var evs struct {
		Events []struct {
			Seq  uint64
			Type string
			Data map[string]string
		}
	}
	must(t, n, "GET", "/v1/sandboxes/keep/events?since="+itoa(posted.Seq-1), nil, http.StatusOK, &evs)
	if len(evs.Events) == 0 || evs.Events[0].Data["k"] != "before-kill" {
		t.Fatalf("events after the restart: %+v", evs)
	}
	if code := n.Stop(t); code != 0 {
		t.Fatalf("serve exited with %d on SIGTERM:\n%s", code, tail(n.Log(), 20))
	}
	if !strings.Contains(n.Log(), "listening on http://"+n.HTTPAddr) || strings.Count(n.Log(), "=== clustertest:") != 2 {
		t.Fatalf("the log does not hold both runs:\n%s", n.Log())
	}
}

// A node that exits before it listens is an error that says so.
func TestStartFails(t *testing.T) {
	_, err := start(t, &Config{Nodes: 1, Args: []string{"--no-such-flag"}})
	if !errors.Is(err, ErrExited) {
		t.Fatalf("start = %v, want ErrExited", err)
	}
}

// Three nodes join the first and agree on the members and the leader.
func TestThreeNodes(t *testing.T) {
	c := Start(t, &Config{Nodes: 3})
	leader := ""
	for _, n := range c.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := c.WaitMembers(ctx, n, 3)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(reqCtx(t), n)
		if err != nil || info.Node != n.ID {
			t.Fatalf("info from %s: %+v %v", n.ID, info, err)
		}
		if leader == "" {
			leader = info.Leader
		}
		if info.Leader != leader {
			t.Fatalf("%s says the leader is %s, another node said %s", n.ID, info.Leader, leader)
		}
	}
}
