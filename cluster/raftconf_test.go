package cluster

import (
	"context"
	"errors"
	"testing"
)

// TestLastVoterStays: the only voter cannot be removed, and stays an alive member;
// RaftServers and HasState report what the node has.
func TestLastVoterStays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if has, err := HasState(dir); err != nil || has {
		t.Fatalf("HasState of an empty dir: %v %v", has, err)
	}
	n := openNode(t, testConfig("solo", dir, "127.0.0.1:0", false))
	waitFor(t, "solo to place all partitions", func() bool { return placed(n, n) })
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := n.Remove(ctx, "solo"); !errors.Is(err, ErrLastVoter) {
		t.Fatalf("Remove of the last voter: %v, want ErrLastVoter", err)
	}
	if ms := n.Members(); len(ms) != 1 || ms[0].Status != StatusAlive {
		t.Fatalf("members after the refused removal: %+v", ms)
	}
	v, err := n.RaftServers()
	if err != nil || len(v) != 1 || !v["solo"] {
		t.Fatalf("RaftServers = %v, %v", v, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if has, err := HasState(dir); err != nil || !has {
		t.Fatalf("HasState after a bootstrap: %v %v", has, err)
	}
}
