package actor

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// BenchmarkActivateEvents measures activating a passivated sandbox whose event log
// holds 10,000 events of 1 KiB (activation sums the stored events' sizes).
func BenchmarkActivateEvents(b *testing.B) {
	n := newTestNode(b, nil)
	mustCreate(b, n, "ae")
	ctx := context.Background()
	data := []byte(`{"p":"` + strings.Repeat("e", 1016) + `"}`)
	var wg sync.WaitGroup
	for range 8 { // concurrent posts share group commits
		wg.Go(func() {
			for range DefaultEventLogLimit / 8 {
				if _, err := n.PostEvent(ctx, "ae", "agent.x", data); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		passivateAll(b, n)
		b.StartTimer()
		if _, err := n.GetSandbox(ctx, "ae"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostEventFull measures posting 1 KiB events to a log at its count bound,
// where every post drops the oldest event.
func BenchmarkPostEventFull(b *testing.B) {
	n := newTestNode(b, func(c *Config) { c.EventLogLimit = 100 })
	mustCreate(b, n, "pf")
	ctx := context.Background()
	data := []byte(`{"p":"` + strings.Repeat("f", 1016) + `"}`)
	for range 100 {
		if _, err := n.PostEvent(ctx, "pf", "agent.x", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := n.PostEvent(ctx, "pf", "agent.x", data); err != nil {
			b.Fatal(err)
		}
	}
}
