package actor

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// BenchmarkActivateDrivers measures what bringing a passivated sandbox back costs on
// the namespace driver (issue #14 figures: activation ≤ 60 ms p50, with and without a
// workspace image; create with a new image ≤ 150 ms p50), against the local driver in
// the same run. Three nodes, interleaved each round: local, namespace, namespace with
// disk images. Each round creates a sandbox (timed), runs one exec, deactivates it,
// then times its activation: GetSandbox (loads it, mounts its image) plus the first
// exec of `true`, which starts the sandbox's runtime (the init, namespaces, mounts,
// cgroups: nothing of it exists while passivated); then a second exec. The derived
// "start" figure is the activation less the second exec, so the init's start-up
// without the exec it serves.
func BenchmarkActivateDrivers(b *testing.B) {
	requireDiskImages(b)
	ns, err := runtime.ProbeNamespace(tctx(b), filepath.Join(b.TempDir(), "probe"), "bench-probe", runtime.NamespaceDriver{})
	if err != nil {
		b.Fatalf("the namespace driver must work on this machine: %v", err)
	}
	nodes := []*testNode{
		newTestNode(b, nil),
		newTestNode(b, func(c *Config) { c.Driver = ns }),
		newTestNode(b, func(c *Config) { c.Driver, c.DiskImages = ns, true }),
	}
	names := []string{"local", "ns", "ns_image"}
	var create, activate, second [3][]time.Duration
	exec := func(n *testNode, id string) time.Duration {
		start := time.Now()
		res, err := n.Exec(tctx(b), id, runtime.ExecOptions{Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v %d %s", err, res.ExitCode, res.Stderr)
		}
		return time.Since(start)
	}
	const rounds = 15
	for b.Loop() {
		for i := 0; i < rounds; i++ {
			id := "a" + strconv.Itoa(len(create[0]))
			for k, n := range nodes {
				start := time.Now()
				mustCreate(b, n, id)
				create[k] = append(create[k], time.Since(start))
				exec(n, id)
				must(b, n.Deactivate(tctx(b), id))
			}
			// Deactivation unmounts the image after the turn: wait, so the activation
			// below does not wait for it inside the timing.
			eventually(b, 10*time.Second, "the image to unmount", func() bool { return nodes[2].MountedImages() == 0 })
			for j := range nodes {
				k := (i + j) % len(nodes) // rotated, so each follows each
				n := nodes[k]
				start := time.Now()
				if _, err := n.GetSandbox(tctx(b), id); err != nil {
					b.Fatal(err)
				}
				exec(n, id)
				activate[k] = append(activate[k], time.Since(start))
				second[k] = append(second[k], exec(n, id))
			}
			for _, n := range nodes {
				must(b, n.DeleteSandbox(tctx(b), id))
			}
		}
	}
	ms := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	for k, name := range names {
		b.ReportMetric(ms(create[k]), name+"_create_p50_ms")
		b.ReportMetric(ms(activate[k]), name+"_activate_p50_ms")
		b.ReportMetric(ms(second[k]), name+"_exec2_p50_ms")
		b.ReportMetric(ms(activate[k])-ms(second[k]), name+"_start_ms")
	}
	b.ReportMetric(ms(activate[1])/ms(activate[0]), "x_activate_ns")
	b.ReportMetric(ms(activate[2])/ms(activate[0]), "x_activate_ns_image")
	b.ReportMetric(ms(create[2])/ms(create[1]), "x_create_image")
	b.ReportMetric(ms(second[1])-ms(second[0]), "exec2_ns_minus_local_ms")
}
