package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// An owner writes a sandbox's records stamped with its epoch and reads them back; a
// batch stamped with any other epoch is fenced.
func ExampleNode_Write() {
	dir, err := os.MkdirTemp("", "cluster-store-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := cluster.DefaultConfig()
	cfg.NodeID = "node-a"
	cfg.DataDir = dir
	cfg.Multiplier = 0.1
	cfg.Secret = []byte("the same 32+ byte secret on every node") // the gateway makes one
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.RaftLogOutput = io.Discard
	n, err := cluster.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, _, ok := n.Owner("my-sandbox"); ok {
			break
		}
	}

	ctx := context.Background()
	epoch := n.Epoch("my-sandbox")
	err = n.Write(ctx, &cluster.Batch{Sandbox: "my-sandbox", Epoch: epoch, Ops: []cluster.Op{
		{Key: []byte("cwd"), Value: []byte("/work")},
		{Key: []byte("ev/0001"), Value: []byte("created")},
	}})
	fmt.Println("write:", err)
	_ = n.Read(ctx, "my-sandbox", func(r cluster.Reader) error {
		fmt.Printf("cwd: %s\n", r.Get([]byte("cwd")))
		k, v := r.Last([]byte("ev/"))
		fmt.Printf("last event: %s=%s\n", k, v)
		return nil
	})
	err = n.Write(ctx, &cluster.Batch{Sandbox: "my-sandbox", Epoch: epoch + 1, Ops: []cluster.Op{{Key: []byte("cwd"), Value: []byte("/")}}})
	fmt.Println("fenced:", errors.Is(err, cluster.ErrFenced))
	// Output:
	// write: <nil>
	// cwd: /work
	// last event: ev/0001=created
	// fenced: true
}
