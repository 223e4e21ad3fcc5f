package actor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// A node in a cluster: Admission and Epoch come from the cluster's table and lease.
// When the lease runs out the node is fenced: processes end, nothing is written, and
// requests are refused until the lease is back.
func ExampleNode_Fence() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "actor-example-")
	defer os.RemoveAll(dir)
	var leaseLost atomic.Bool
	node, err := actor.Open(ctx, &actor.Config{
		NodeID:  "n1",
		DataDir: dir,
		Admission: func(string) error {
			if leaseLost.Load() {
				return errors.New("lease expired")
			}
			return nil
		},
		Epoch: func(string) uint64 { return 7 },
	})
	if err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	node.CreateSandbox(ctx, actor.SandboxSpec{ID: "dev1"})
	node.StartProcess(ctx, "dev1", runtime.StartOptions{Argv: []string{"sleep", "300"}})
	fmt.Println("busy:", node.Busy("dev1"))

	leaseLost.Store(true)
	node.Fence("lease expired")
	_, err = node.GetSandbox(ctx, "dev1")
	fmt.Println("while fenced:", errors.Is(err, actor.ErrUnavailable))

	leaseLost.Store(false)
	sb, err := node.GetSandbox(ctx, "dev1")
	fmt.Println("lease back:", err == nil, sb.Counts.Processes)
	// Output:
	// busy: true
	// while fenced: true
	// lease back: true 0
}
