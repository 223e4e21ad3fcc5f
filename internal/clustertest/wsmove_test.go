package clustertest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// incoming reports which node has a workspace import under way: an entry of its
// workspaces directory that starts with ".incoming-".
func incoming(nodes []*Node) *Node {
	for _, n := range nodes {
		ents, _ := os.ReadDir(filepath.Join(n.DataDir, "workspaces"))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".incoming-") {
				return n
			}
		}
	}
	return nil
}

// TestDrainOwnerKilledMidStream drains the owner of a sandbox holding a 256 MiB
// workspace and kills it with SIGKILL while its workspace streams to the new owner:
// the sandbox answers on the new owner, its sandbox.moved names the workspace lost,
// and none of the files shows up there, nor anything the import had written.
func TestDrainOwnerKilledMidStream(t *testing.T) {
	c := Start(t, &Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	info, err := c.Info(ctx, c.Nodes[0])
	if err != nil || info.Leader == "" {
		t.Fatalf("no leader: %+v %v", info, err)
	}
	// A follower owner: killing it costs no election.
	sb, owner := c.CreateWhere(ctx, t, "wk", func(node string) bool { return node != info.Leader })
	leader := c.Node(info.Leader)
	must(t, leader, "PUT", "/v1/sandboxes/"+sb+"/files?path=keep.txt", "kept\n", http.StatusNoContent, nil)
	var ex struct {
		ExitCode int    `json:"exit_code"`
		Stderr   string `json:"stderr"`
	}
	must(t, leader, "POST", "/v1/sandboxes/"+sb+"/exec",
		map[string]any{"command": "head -c 268435456 /dev/urandom > big.bin", "timeout_ms": 120000}, http.StatusOK, &ex)
	if ex.ExitCode != 0 {
		t.Fatalf("writing big.bin: %+v", ex)
	}
	must(t, leader, "POST", "/v1/cluster/members/"+owner.ID+"/drain", nil, http.StatusAccepted, nil)
	var others []*Node
	for _, n := range c.Nodes {
		if n != owner {
			others = append(others, n)
		}
	}
	var receiver *Node
	for receiver == nil {
		if ctx.Err() != nil {
			t.Fatal("no workspace import was seen on the other nodes")
		}
		receiver = incoming(others)
		time.Sleep(2 * time.Millisecond) // a directory listing has no event to wait on
	}
	owner.Kill(t)
	t.Logf("killed %s while its workspace streamed to %s", owner.ID, receiver.ID)

	var moved []map[string]any
	for moved == nil {
		if ctx.Err() != nil {
			t.Fatalf("sandbox %s did not answer after its old owner died", sb)
		}
		var evs struct {
			Events []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"events"`
		}
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		var got struct{ Node string }
		resp, err := receiver.Do(rctx, "GET", "/v1/sandboxes/"+sb, nil)
		if err == nil && resp.JSON(http.StatusOK, &got) == nil && got.Node != owner.ID {
			resp, err = receiver.Do(rctx, "GET", "/v1/sandboxes/"+sb+"/events", nil)
			if err == nil && resp.JSON(http.StatusOK, &evs) == nil {
				moved = []map[string]any{}
				for _, e := range evs.Events {
					if e.Type == "sandbox.moved" {
						moved = append(moved, e.Data)
					}
				}
			}
		}
		rcancel()
		time.Sleep(20 * time.Millisecond)
	}
	if len(moved) != 1 {
		t.Fatalf("sandbox.moved events: %v, want one", moved)
	}
	lost, _ := moved[0]["lost"].([]any)
	if !slices.Contains(lost, any("workspace")) {
		t.Fatalf("sandbox.moved %v: want the workspace named lost", moved[0])
	}
	must(t, receiver, "GET", "/v1/sandboxes/"+sb+"/files?path=keep.txt", nil, http.StatusNotFound, nil)
	var dir struct {
		Entries []map[string]any `json:"entries"`
	}
	must(t, receiver, "GET", "/v1/sandboxes/"+sb+"/files?path=.", nil, http.StatusOK, &dir)
	if len(dir.Entries) != 0 {
		t.Fatalf("the new owner's workspace holds %v", dir.Entries)
	}
	if n := incoming(others); n != nil {
		t.Fatalf("an unfinished import is left on %s", n.ID)
	}
}

// TestDrainMovesWorkspace drains the owner of a sandbox with files (a subdirectory, a
// symlink, an executable, 16 MiB of random bytes) between real serve processes: the
// new owner serves the same files, and its sandbox.moved lost nothing.
func TestDrainMovesWorkspace(t *testing.T) {
	c := Start(t, &Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, n1 := "wm-1", c.Nodes[0]
	var got struct{ Node string }
	for {
		resp, err := n1.Do(ctx, "POST", "/v1/sandboxes", map[string]string{"id": sb})
		if err == nil && resp.Status == http.StatusServiceUnavailable && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond) // its partition is moving (the joins' rebalance)
			continue
		}
		if err != nil || resp.JSON(http.StatusCreated, &got) != nil {
			t.Fatalf("create: %v %+v", err, resp)
		}
		break
	}
	const sum = "sha256sum sub/r.bin run.sh; readlink link; ./run.sh"
	var before, after struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	must(t, n1, "PUT", "/v1/sandboxes/"+sb+"/files?path=run.sh&mode=0755", "#!/bin/sh\necho ran\n", http.StatusNoContent, nil)
	must(t, n1, "POST", "/v1/sandboxes/"+sb+"/exec",
		map[string]any{"command": "mkdir sub && head -c 16777216 /dev/urandom > sub/r.bin && ln -s sub/r.bin link && " + sum}, http.StatusOK, &before)
	if before.ExitCode != 0 {
		t.Fatalf("before the move: %+v", before)
	}
	must(t, n1, "POST", "/v1/cluster/members/"+got.Node+"/drain", nil, http.StatusAccepted, nil)
	for {
		if ctx.Err() != nil {
			t.Fatalf("%s did not move off %s", sb, got.Node)
		}
		var now struct{ Node string }
		resp, err := n1.Do(ctx, "GET", "/v1/sandboxes/"+sb, nil)
		if err == nil && resp.JSON(http.StatusOK, &now) == nil && now.Node != got.Node {
			break
		}
		time.Sleep(20 * time.Millisecond) // polled through the API: no event to wait on
	}
	for _, n := range c.Nodes {
		if n.ID == got.Node {
			continue
		}
		must(t, n, "POST", "/v1/sandboxes/"+sb+"/exec", map[string]any{"command": sum}, http.StatusOK, &after)
		if after != before {
			t.Fatalf("through %s after the move: %+v, want %+v", n.ID, after, before)
		}
	}
	var evs struct {
		Events []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	must(t, n1, "GET", "/v1/sandboxes/"+sb+"/events", nil, http.StatusOK, &evs)
	for _, e := range evs.Events {
		if e.Type == "sandbox.moved" {
			if l, _ := e.Data["lost"].([]any); len(l) != 0 || e.Data["planned"] != true {
				t.Fatalf("sandbox.moved %v: want planned, nothing lost", e.Data)
			}
			return
		}
	}
	t.Fatalf("no sandbox.moved in %+v", evs.Events)
}
