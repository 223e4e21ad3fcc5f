package actor_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// A node on a data directory: create a sandbox, run a command, post an agent event and
// read the sandbox's event log.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "actor-example-")
	defer os.RemoveAll(dir)
	node, err := actor.Open(ctx, &actor.Config{NodeID: "n1", DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	sb, created, _ := node.CreateSandbox(ctx, actor.SandboxSpec{ID: "dev1", Env: map[string]string{"GREETING": "hi"}})
	fmt.Println(sb.ID, sb.State, created)
	res, _ := node.Exec(ctx, "dev1", runtime.ExecOptions{Command: "echo $GREETING"})
	fmt.Print(string(res.Stdout))
	seq, _ := node.PostEvent(ctx, "dev1", "agent.step", []byte(`{"done":1}`))
	fmt.Println("seq", seq)
	evs, _ := node.Events(ctx, "dev1", 0, 10)
	for _, e := range evs {
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// dev1 running true
	// hi
	// seq 2
	// 1 sandbox.created
	// 2 agent.step
}
