package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// A node with no state and no join target bootstraps a cluster of one and owns every
// partition once it has placed them.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "cluster-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	cfg := cluster.DefaultConfig()
	cfg.NodeID = "node-a"
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:8080"
	cfg.Secret = []byte("the same 32+ byte secret on every node") // the gateway makes one
	cfg.Multiplier = 0.1
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.RaftLogOutput = io.Discard
	n, err := cluster.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if owner, _, ok := n.Owner("my-sandbox"); ok {
			fmt.Println("owner:", owner, "leader:", n.IsLeader())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("no owner")
	// Output: owner: node-a leader: true
}
