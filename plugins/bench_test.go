package plugins_test

import (
	"context"
	"errors"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
	"github.com/sandgate/sandgate/plugins/internal/wire"
)

// benchRequest is a typical exec request the guard example sees.
var benchRequest = plugins.RouteRequest{
	Tenant: "acme", Method: "POST", Route: "POST /v1/sandboxes/{sb}/exec", SandboxID: "dev1",
	Labels: map[string]string{"tier": "pro", "team": "infra"}, Command: []string{"sh", "-c", "ls -la | wc -l"},
}

func guardPlugin(tb testing.TB) string {
	tb.Helper()
	p, err := builder.Go(filepath.Join("..", "examples", "plugins", "guard"))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// nativeGuard is the guard example's logic as plain Go, the baseline.
func nativeGuard(r *plugins.RouteRequest) plugins.Decision {
	if len(r.Command) == 0 || r.Tenant == "admin" {
		return plugins.Decision{Allow: true}
	}
	cmd := strings.Join(r.Command, " ")
	for _, e := range []string{"mkfs", ":(){"} {
		if strings.Contains(cmd, e) {
			return plugins.Decision{Status: 403, Reason: "blocked by guard: " + e}
		}
	}
	return plugins.Decision{Allow: true}
}

func benchHost(b *testing.B, path string, edit func(*plugins.Config)) *plugins.Host {
	return newHost(b, path, func(c *plugins.Config) {
		c.CallTimeout = 20 * time.Millisecond // the production default: deadline on
		c.PoolSize = 2 * goruntime.GOMAXPROCS(0)
		c.BreakerFailures = 1 << 30 // measure every call; failures are reported per op
		if edit != nil {
			edit(c)
		}
	})
}

// BenchmarkRoute measures one route decision end to end (encode, acquire, call under
// the deadline, decode), serially and in parallel, against native Go baselines.
func BenchmarkRoute(b *testing.B) {
	b.Run("native", func(b *testing.B) {
		for b.Loop() {
			if d := nativeGuard(&benchRequest); !d.Allow {
				b.Fatal(d)
			}
		}
	})
	b.Run("native+codec", func(b *testing.B) {
		var buf, out []byte
		for b.Loop() {
			buf = wire.AppendRouteRequest(buf[:0], (*wire.RouteRequest)(&benchRequest))
			var r wire.RouteRequest
			if err := wire.DecodeRouteRequest(buf, &r); err != nil {
				b.Fatal(err)
			}
			d := nativeGuard((*plugins.RouteRequest)(&r))
			out = wire.AppendDecision(out[:0], (*wire.Decision)(&d))
			var got wire.Decision
			if err := wire.DecodeDecision(out, &got); err != nil || !got.Allow {
				b.Fatal(got, err)
			}
		}
	})
	for _, p := range []struct{ name, path string }{
		{"wasm-go", guardPlugin(b)},
		{"wasm-wat", filepath.Join("..", "examples", "plugins", "pools", "pools.wasm")},
	} {
		h := benchHost(b, p.path, nil)
		b.Run(p.name, func(b *testing.B) {
			var failed int
			for b.Loop() {
				if d, err := h.Route(ctx, &benchRequest); err != nil || !d.Allow {
					failed++
				}
			}
			b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
		})
		b.Run(p.name+"-parallel", func(b *testing.B) {
			var failed atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d, err := h.Route(ctx, &benchRequest); err != nil || !d.Allow {
						failed.Add(1)
					}
				}
			})
			perCore := float64(b.N) / b.Elapsed().Seconds() / float64(goruntime.GOMAXPROCS(0))
			b.ReportMetric(perCore, "decisions/s/core")
			b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
		})
	}
}

// BenchmarkRouteLatency reports the p50 and p99 of single route decisions, for the Go
// guard example and the WAT pools example, and of the native baseline.
func BenchmarkRouteLatency(b *testing.B) {
	report := func(b *testing.B, samples []time.Duration, failed int) {
		slices.Sort(samples)
		b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(samples[len(samples)-1].Nanoseconds()), "max-ns")
		b.ReportMetric(float64(failed)/float64(len(samples)), "failed/op")
	}
	b.Run("native", func(b *testing.B) {
		samples := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			nativeGuard(&benchRequest)
			samples = append(samples, time.Since(start))
		}
		report(b, samples, 0)
	})
	for _, p := range []struct{ name, path string }{
		{"wasm-go", guardPlugin(b)},
		{"wasm-wat", filepath.Join("..", "examples", "plugins", "pools", "pools.wasm")},
	} {
		h := benchHost(b, p.path, nil)
		for range 1000 { // warm up
			_, _ = h.Route(ctx, &benchRequest)
		}
		b.Run(p.name, func(b *testing.B) {
			samples := make([]time.Duration, 0, b.N)
			failed := 0
			for b.Loop() {
				start := time.Now()
				d, err := h.Route(ctx, &benchRequest)
				samples = append(samples, time.Since(start))
				if err != nil || !d.Allow {
					failed++
				}
			}
			report(b, samples, failed)
		})
	}
}

// BenchmarkRunaway reports how long past its 20 ms deadline a looping plugin runs.
func BenchmarkRunaway(b *testing.B) {
	const deadline = 20 * time.Millisecond
	h := benchHost(b, plugin(b, "bad"), func(c *plugins.Config) {
		c.PoolSize = 1
		c.BreakerFailures = 1 << 30
		c.CallTimeout = 20 * time.Millisecond
	})
	var worst, total time.Duration
	for b.Loop() {
		// Wait until the pool has refilled, so the timing covers only the runaway call.
		waitFor(b, "refill", func() bool { s := h.Stats(); return s.InstancesCreated-s.InstancesDiscarded == 1 })
		start := time.Now()
		_, err := h.Route(ctx, &plugins.RouteRequest{SandboxID: "loop"})
		took := time.Since(start)
		if !errors.Is(err, plugins.ErrTimeout) {
			b.Fatal(err)
		}
		worst = max(worst, took-deadline)
		total += took - deadline
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "overshoot-µs/op")
	b.ReportMetric(float64(worst.Microseconds()), "worst-overshoot-µs")
}

// BenchmarkReload measures a reload from a warm compilation cache, with the pool
// pre-warmed before the swap.
func BenchmarkReload(b *testing.B) {
	h := benchHost(b, copyTo(b, guardPlugin(b)), nil)
	for b.Loop() {
		if err := h.Reload(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.Stats().InstancesCreated)/float64(h.Stats().RuntimesOpened), "instances/reload")
}

// BenchmarkInstanceMemory reports the linear memory of one pooled Go instance after
// 10,000 decisions.
func BenchmarkInstanceMemory(b *testing.B) {
	h := benchHost(b, guardPlugin(b), func(c *plugins.Config) { c.PoolSize = 1 })
	for b.Loop() {
		for range 10000 {
			_, _ = h.Route(ctx, &benchRequest)
		}
	}
	n, err := plugins.InstanceMemoryBytes(h)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/(1<<20), "MiB/instance")
}
