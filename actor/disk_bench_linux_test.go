package actor

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDiskImages measures what a workspace image costs: sandbox create with a new
// 1 GiB image (the default budget's) against create without one, and activation of a
// passivated sandbox (GetSandbox: load, and with an image its mount) against the same
// without, and delete (with an image: unmount and remove it), interleaved in one run on
// the real disk. It reports p50 and p90 of each in
// ms and the p50 ratios. Targets: create with an image ≤ 150 ms, activation ≤ 60 ms.
func BenchmarkDiskImages(b *testing.B) {
	requireDiskImages(b)
	plain := newTestNode(b, nil)
	img := newTestNode(b, func(c *Config) { c.DiskImages = true })
	var create, activate, del [2][]time.Duration
	nodes := [2]*testNode{plain, img}
	for i := range b.N {
		id := "b" + strconv.Itoa(i)
		for k, n := range nodes {
			start := time.Now()
			mustCreate(b, n, id)
			create[k] = append(create[k], time.Since(start))
		}
		for _, n := range nodes {
			must(b, n.Deactivate(tctx(b), id))
		}
		// The activation leaves the registry, then unmounts: wait, so the next one
		// does not wait for it inside the timing.
		eventually(b, 10*time.Second, "the image to unmount", func() bool { return img.MountedImages() == 0 })
		for k, n := range nodes {
			start := time.Now()
			if _, err := n.GetSandbox(tctx(b), id); err != nil {
				b.Fatal(err)
			}
			activate[k] = append(activate[k], time.Since(start))
		}
		for k, n := range nodes {
			start := time.Now()
			must(b, n.DeleteSandbox(tctx(b), id))
			del[k] = append(del[k], time.Since(start))
		}
	}
	report := func(name string, ds []time.Duration) float64 {
		slices.Sort(ds)
		p50 := float64(ds[len(ds)/2].Microseconds()) / 1000
		b.ReportMetric(p50, name+"_p50_ms")
		b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, name+"_p90_ms")
		return p50
	}
	cp, ci := report("create_plain", create[0]), report("create_image", create[1])
	ap, ai := report("activate_plain", activate[0]), report("activate_image", activate[1])
	dp, di := report("delete_plain", del[0]), report("delete_image", del[1])
	b.ReportMetric(ci/cp, "x_create")
	b.ReportMetric(di/dp, "x_delete")
	b.ReportMetric(ai/ap, "x_activate")
}
