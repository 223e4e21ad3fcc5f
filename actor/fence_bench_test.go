package actor

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// BenchmarkFence fences a node holding 50 active sandboxes, each running a process,
// and reports how long Fence takes to return (fence_us) and how long until every
// process is gone and every activation has left (gone_ms). Setup (activations,
// process starts) is not timed.
func BenchmarkFence(b *testing.B) {
	const sandboxes = 50
	n := newTestNode(b, func(c *Config) { c.NodeID = "bench-fence" })
	for i := range sandboxes {
		mustCreate(b, n, fmt.Sprintf("bf%d", i))
	}
	var fenceNs, goneNs float64
	for range b.N {
		b.StopTimer()
		pids := make([]int, 0, sandboxes)
		for i := range sandboxes {
			p, err := n.StartProcess(tctx(b), fmt.Sprintf("bf%d", i), runtime.StartOptions{Argv: []string{"sleep", "300"}})
			must(b, err)
			pids = append(pids, p.PID)
		}
		b.StartTimer()
		start := time.Now()
		n.Fence("bench")
		fenceNs += float64(time.Since(start).Nanoseconds())
		eventually(b, 60*time.Second, "processes gone", func() bool {
			for _, pid := range pids {
				if !pidGone(pid) {
					return false
				}
			}
			return n.ActiveActors() == 0
		})
		goneNs += float64(time.Since(start).Nanoseconds())
	}
	b.ReportMetric(fenceNs/float64(b.N)/1e3, "fence_us")
	b.ReportMetric(goneNs/float64(b.N)/1e6, "gone_ms")
}
