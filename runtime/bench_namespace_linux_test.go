package runtime

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkNamespaceStart times a sandbox's start (New: cgroups, and for the
// namespace driver the init with its namespaces, mounts and hardening), its first exec
// of `true` and its second, on the namespace driver and the local driver alternately
// (which goes first alternates), and reports the p50s and the namespace driver's
// first exec less the local driver's (issue #14: ≤ 1 ms), and its start (≤ 60 ms).
//
//	go test -run '^$' -bench BenchmarkNamespaceStart -benchtime=1x ./runtime/
func BenchmarkNamespaceStart(b *testing.B) {
	requireContainment(b)
	ctx := context.Background()
	drivers := []Driver{LocalDriver{}, NamespaceDriver{}}
	var start, first, second [2][]time.Duration
	exec := func(s *Sandbox) time.Duration {
		t0 := time.Now()
		res, err := s.Exec(ctx, ExecOptions{Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res.ExitCode, string(res.Stderr))
		}
		return time.Since(t0)
	}
	const rounds = 20
	for b.Loop() {
		for i := 0; i < rounds; i++ {
			for j := range drivers {
				k := (i + j) % len(drivers)
				t0 := time.Now()
				s, err := New(&Config{Dir: b.TempDir(), Driver: drivers[k]})
				if err != nil {
					b.Fatal(err)
				}
				start[k] = append(start[k], time.Since(t0))
				first[k] = append(first[k], exec(s))
				second[k] = append(second[k], exec(s))
				cctx, cancel := context.WithTimeout(ctx, bound)
				err = s.Close(cctx)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	ms := func(d []time.Duration) float64 { return float64(p50(d).Microseconds()) / 1000 }
	for k, name := range []string{"local", "ns"} {
		b.ReportMetric(ms(start[k]), name+"_start_p50_ms")
		b.ReportMetric(ms(first[k]), name+"_exec1_p50_ms")
		b.ReportMetric(ms(second[k]), name+"_exec2_p50_ms")
	}
	b.ReportMetric(ms(first[1])-ms(first[0]), "exec1_ns_minus_local_ms")
	b.ReportMetric(ms(first[1])/ms(second[1]), "ns_exec1/exec2")
}

// BenchmarkLeaseExtend measures Extend with 20 sandboxes holding the lease: the
// caller's cost (the frames go out on each init's sender goroutine; nsinit's
// BenchmarkRenew measures them delivered).
func BenchmarkLeaseExtend(b *testing.B) {
	const n = 20
	lease := NewLease()
	lease.Extend(time.Now().Add(time.Hour))
	for range n {
		newLeaseSandbox(b, lease, nil)
	}
	until := time.Now().Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		until = until.Add(time.Millisecond)
		lease.Extend(until)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sandbox")
}

// BenchmarkExecDriversRuntime times Sandbox.Exec of `true` on a namespace-driver
// sandbox, a local-driver one and a raw os/exec of `true`, in rotated order each
// round, and reports the p50s and their ratios: the drivers' difference without the
// HTTP server around it (gateway's BenchmarkExecDrivers).
//
//	go test -run '^$' -bench BenchmarkExecDriversRuntime -benchtime=1x ./runtime/
func BenchmarkExecDriversRuntime(b *testing.B) {
	requireContainment(b)
	ctx := context.Background()
	var sbs [2]*Sandbox
	for i, d := range []Driver{NamespaceDriver{}, LocalDriver{}} {
		s, err := New(&Config{Dir: b.TempDir(), Driver: d})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			if err := s.Close(cctx); err != nil {
				b.Error(err)
			}
		}()
		sbs[i] = s
	}
	run := func(s *Sandbox) func() {
		return func() {
			if res, err := s.Exec(ctx, ExecOptions{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode, string(res.Stderr))
			}
		}
	}
	ways := []func(){
		func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		},
		run(sbs[0]),
		run(sbs[1]),
	}
	for _, w := range ways {
		w() // the namespace sandbox's init is running already; this warms the rest
	}
	const rounds = 300
	took := make([][]time.Duration, len(ways))
	for b.Loop() {
		for i := 0; i < rounds; i++ {
			for j := range ways {
				k := (i + j) % len(ways)
				t0 := time.Now()
				ways[k]()
				took[k] = append(took[k], time.Since(t0))
			}
		}
	}
	raw, ns, local := float64(p50(took[0])), float64(p50(took[1])), float64(p50(took[2]))
	b.ReportMetric(raw/1e3, "raw-p50-µs")
	b.ReportMetric(ns/1e3, "ns-p50-µs")
	b.ReportMetric(local/1e3, "local-p50-µs")
	b.ReportMetric(ns/local, "ns/local-p50")
	b.ReportMetric(local/raw, "local/raw-p50")
}
