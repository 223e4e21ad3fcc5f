package actor

import (
	"fmt"
	"testing"
)

// BenchmarkCreateDelete creates a sandbox with a file in its workspace and deletes it,
// the cost a delete's marker (a file and a directory sync before the commit) adds to.
func BenchmarkCreateDelete(b *testing.B) {
	n := newTestNode(b, nil)
	ctx := tctx(b)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("bd%d", i)
		if _, _, err := n.CreateSandbox(ctx, SandboxSpec{ID: id, Cwd: "d"}); err != nil {
			b.Fatal(err)
		}
		if err := n.DeleteSandbox(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
