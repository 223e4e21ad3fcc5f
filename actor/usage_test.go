package actor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// The sandbox object carries usage while the sandbox is active, none once passivated;
// memory and pids come from the runtime, disk from the workspace, cached; the node's
// Stats sum them.
func TestUsageWhileActive(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.runtimeUsage = func(*runtime.Sandbox) (int64, int) { return 5 << 20, 3 }
	})
	mustCreate(t, n, "u1")
	ctx := tctx(t)
	in, err := n.GetSandbox(ctx, "u1")
	must(t, err)
	if in.Usage == nil {
		t.Fatal("no usage on an active sandbox")
	}
	if in.Usage.MemoryBytes != 0 || in.Usage.Pids != 0 {
		t.Fatalf("usage %+v before the runtime started, want no memory or pids", *in.Usage)
	}

	// Start the runtime; write 256 KiB into the workspace.
	_, err = n.Exec(ctx, "u1", runtime.ExecOptions{Argv: []string{"true"}})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(n.workspaceDir("u1"), "big"), bytes.Repeat([]byte("x"), 256<<10), 0o644))
	n.clock.Advance(diskUsageMaxAge) // the cached disk figure is stale now
	in, err = n.GetSandbox(ctx, "u1")
	must(t, err)
	if u := in.Usage; u == nil || u.MemoryBytes != 5<<20 || u.Pids != 3 || u.DiskBytes < 256<<10 {
		t.Fatalf("usage %+v, want 5 MiB, 3 pids and at least 256 KiB of disk", in.Usage)
	}
	first := in.Usage.DiskBytes

	// Within diskUsageMaxAge the figure is cached, not walked again.
	must(t, os.WriteFile(filepath.Join(n.workspaceDir("u1"), "more"), bytes.Repeat([]byte("y"), 256<<10), 0o644))
	in, err = n.GetSandbox(ctx, "u1")
	must(t, err)
	if in.Usage.DiskBytes != first {
		t.Fatalf("disk usage %d within the cache age, want the cached %d", in.Usage.DiskBytes, first)
	}
	n.clock.Advance(diskUsageMaxAge)
	in, err = n.GetSandbox(ctx, "u1")
	must(t, err)
	if in.Usage.DiskBytes < first+256<<10 {
		t.Fatalf("disk usage %d after the cache age, want at least %d", in.Usage.DiskBytes, first+256<<10)
	}
	// A group publishes after answering: the next turn runs after that publish.
	_, err = n.GetSandbox(ctx, "u1")
	must(t, err)
	if st := n.Stats(); st.MemoryBytes != 5<<20 || st.Pids != 3 || st.DiskBytes != in.Usage.DiskBytes {
		t.Fatalf("stats %+v, want the active sandbox's usage %+v", st, *in.Usage)
	}

	must(t, n.Deactivate(ctx, "u1"))
	list, err := n.ListSandboxes(ctx, nil)
	must(t, err)
	if len(list) != 1 || list[0].Usage != nil {
		t.Fatalf("passivated sandbox listed with usage: %+v", list)
	}
	if st := n.Stats(); st.MemoryBytes != 0 || st.Pids != 0 || st.DiskBytes != 0 {
		t.Fatalf("stats %+v with no active sandbox", st)
	}
}

// What a group publishes after its turns (for Stats and the list) reads the runtime's
// memory and pids at most once per cgroupUsageMaxAge; GetSandbox reads them afresh, and
// what it read is what the next publish shows.
func TestUsageReadsThrottled(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	var mem atomic.Int64
	mem.Store(1 << 20)
	n := newTestNode(t, func(c *Config) {
		c.runtimeUsage = func(*runtime.Sandbox) (int64, int) { reads.Add(1); return mem.Load(), 1 }
	})
	mustCreate(t, n, "u1")
	ctx := tctx(t)
	exec := func() {
		t.Helper()
		_, err := n.Exec(ctx, "u1", runtime.ExecOptions{Argv: []string{"true"}})
		must(t, err)
	}
	exec() // starts the runtime: its first figures are read
	before := reads.Load()
	if before == 0 {
		t.Fatal("no usage read after the runtime started")
	}
	for range 20 {
		exec()
	}
	if got := reads.Load() - before; got != 0 {
		t.Fatalf("20 execs within %v read the runtime's usage %d times, want 0", cgroupUsageMaxAge, got)
	}

	// Once the figures are older than cgroupUsageMaxAge, the next publish reads them.
	mem.Store(2 << 20)
	n.clock.Advance(cgroupUsageMaxAge)
	exec()
	_, err := n.GetSandbox(ctx, "u1") // a group publishes after answering: this one runs after that publish
	must(t, err)
	if st := n.Stats(); st.MemoryBytes != 2<<20 {
		t.Fatalf("stats memory %d after the cache age, want %d", st.MemoryBytes, 2<<20)
	}

	// GetSandbox reads afresh, within the cache age too.
	mem.Store(3 << 20)
	in, err := n.GetSandbox(ctx, "u1")
	must(t, err)
	if in.Usage == nil || in.Usage.MemoryBytes != 3<<20 {
		t.Fatalf("GetSandbox usage %+v, want %d bytes of memory", in.Usage, 3<<20)
	}
	_, err = n.GetSandbox(ctx, "u1")
	must(t, err)
	if st := n.Stats(); st.MemoryBytes != 3<<20 {
		t.Fatalf("stats memory %d after GetSandbox read %d", st.MemoryBytes, 3<<20)
	}
}

// Ending a sandbox's work (hibernation, a fence) drops its cached usage figures with
// its runtime, so an actor kept in memory holds no closed runtime.
func TestUsageForgetsClosedRuntime(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.runtimeUsage = func(*runtime.Sandbox) (int64, int) { return 1 << 20, 1 }
	})
	mustCreate(t, n, "u1")
	ctx := tctx(t)
	_, err := n.Exec(ctx, "u1", runtime.ExecOptions{Argv: []string{"true"}})
	must(t, err)
	held, err := call(ctx, n.Node, "u1", func(a *sbActor) (bool, error) {
		before := a.sb.cgroup.rt != nil
		a.endWork(false)
		return before && a.sb.cgroup.rt == nil, nil
	})
	must(t, err)
	if !held {
		t.Fatal("the cached usage kept the closed runtime (or never held the running one)")
	}
}

func TestDiskUsageBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 10 {
		must(t, os.WriteFile(filepath.Join(dir, string(rune('a'+i))), bytes.Repeat([]byte("z"), 8192), 0o644))
	}
	tests := []struct {
		name     string
		limit    int
		min, max int64
	}{
		{name: "all", limit: 100, min: 10 * 8192, max: 20 * 8192},
		{name: "bounded", limit: 3, min: 8192, max: 3 * 8192}, // the root dir and two files at most
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := diskUsage(dir, tc.limit)
			if got < tc.min || got > tc.max+8192 {
				t.Fatalf("diskUsage(limit %d) = %d, want in [%d, %d]", tc.limit, got, tc.min, tc.max+8192)
			}
		})
	}
}

// TestDiskUsageCountsHardLinksOnce: a file with four names takes its blocks once.
func TestDiskUsageCountsHardLinksOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "blob"), bytes.Repeat([]byte("z"), 1<<20), 0o644))
	alone := diskUsage(dir, 100)
	for _, n := range []string{"b", "c", "d"} {
		must(t, os.Link(filepath.Join(dir, "blob"), filepath.Join(dir, n)))
	}
	if got := diskUsage(dir, 100); got < 1<<20 || got > alone+8192 {
		t.Fatalf("diskUsage with three more names = %d, want about %d (one name)", got, alone)
	}
}

// BenchmarkUsage measures what usage costs: a turn that computes usage (its disk figure
// cached) and a GetSandbox turn against a turn that does nothing, and a disk walk of a
// 2,000-file workspace against listing it.
func BenchmarkUsage(b *testing.B) {
	n := newTestNode(b, nil)
	mustCreate(b, n, "bench")
	dir := n.workspaceDir("bench")
	for i := range 2000 {
		must(b, os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("x"), 0o644))
	}
	ctx := tctx(b)
	noop := func(a *sbActor) (int, error) { return 1, nil }
	const rounds = 5000
	usage := func(a *sbActor) (int, error) { a.usageNow(true); return 1, nil }
	var noopNs, usageNs, getNs, listNs, walkNs float64
	for range b.N {
		start := time.Now()
		for range rounds {
			if _, err := call(ctx, n.Node, "bench", noop); err != nil {
				b.Fatal(err)
			}
		}
		noopNs += float64(time.Since(start).Nanoseconds()) / rounds
		start = time.Now()
		for range rounds {
			if _, err := call(ctx, n.Node, "bench", usage); err != nil {
				b.Fatal(err)
			}
		}
		usageNs += float64(time.Since(start).Nanoseconds()) / rounds
		start = time.Now()
		for range rounds {
			if _, err := n.GetSandbox(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		getNs += float64(time.Since(start).Nanoseconds()) / rounds
		start = time.Now()
		if _, err := os.ReadDir(dir); err != nil {
			b.Fatal(err)
		}
		listNs += float64(time.Since(start).Nanoseconds())
		start = time.Now()
		diskUsage(dir, diskWalkLimit)
		walkNs += float64(time.Since(start).Nanoseconds())
	}
	b.ReportMetric(usageNs/noopNs, "usage_x_noop_turn")
	b.ReportMetric(getNs/noopNs, "get_x_noop_turn")
	b.ReportMetric(walkNs/float64(b.N)/1e6, "walk_2000_ms")
	b.ReportMetric(walkNs/listNs, "walk_x_readdir")
}

// TestUsageFromCgroups: without a stand-in, memory and pids come from the sandbox's
// cgroups (a stand-in hid that the runtime's Usage was never asked).
func TestUsageFromCgroups(t *testing.T) {
	t.Parallel()
	if how, err := runtime.Containment(); err != nil {
		t.Fatalf("this test needs the machine's cgroups (%s): %v", how, err)
	}
	n := newTestNode(t, nil)
	mustCreate(t, n, "ucg")
	ctx := tctx(t)
	// The shell forks only once it is in the sandbox's v1 groups: the local driver
	// writes a leader's pid there just after it started, and a child forked before
	// stays outside.
	in := "grep -q 'pids:/.*sandgate' /proc/$$/cgroup && grep -q 'memory:/.*sandgate' /proc/$$/cgroup"
	_, err := n.StartProcess(ctx, "ucg", runtime.StartOptions{Command: "until " + in + "; do :; done; sleep 30 & sleep 30"})
	must(t, err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := n.GetSandbox(tctx(t), "ucg")
		must(t, err)
		if u := info.Usage; u != nil && u.Pids >= 3 && u.MemoryBytes > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage %+v of a sandbox running three processes, want them counted and some memory", info.Usage)
		}
		time.Sleep(10 * time.Millisecond) // the shell forks its sleeps on its own time
	}
}

// TestUsageOnlyWhileRunning: a sandbox kept in memory shows usage only while it runs:
// once hibernated or expired it runs nothing, so its object, its list entry and the
// node's Stats carry none, and waking it brings usage back.
func TestUsageOnlyWhileRunning(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) {
		c.Limits = Budget{IdleTTL: 10 * time.Minute, MaxDuration: time.Hour}
		c.PassivateAfter = 24 * time.Hour // stays in memory throughout
		c.runtimeUsage = func(*runtime.Sandbox) (int64, int) { return 1 << 20, 2 }
	})
	ctx := tctx(t)
	mustCreate(t, n, "ur")
	exec := func() {
		t.Helper()
		_, err := n.Exec(ctx, "ur", runtime.ExecOptions{Argv: []string{"true"}})
		must(t, err)
	}
	wantUsage := func(when string, want bool) {
		t.Helper()
		in, err := n.GetSandbox(ctx, "ur")
		must(t, err)
		if (in.Usage != nil) != want {
			t.Fatalf("%s (state %s): usage %+v, want present %v", when, in.State, in.Usage, want)
		}
		_, err = n.GetSandbox(ctx, "ur") // runs after the first one's group published
		must(t, err)
		list, err := n.ListSandboxes(ctx, nil)
		must(t, err)
		if len(list) != 1 || (list[0].Usage != nil) != want {
			t.Fatalf("%s: listed %+v, want usage present %v", when, list, want)
		}
		if st := n.Stats(); (st.MemoryBytes != 0) != want {
			t.Fatalf("%s: stats %+v, want usage counted %v", when, st, want)
		}
	}
	exec()
	wantUsage("running", true)
	n.clock.Advance(11 * time.Minute)
	eventually(t, 10*time.Second, "hibernated", func() bool {
		in, err := n.GetSandbox(ctx, "ur")
		return err == nil && in.State == StateHibernated
	})
	wantUsage("hibernated", false)
	exec() // wakes it
	wantUsage("woken", true)
	n.clock.Advance(time.Hour)
	eventually(t, 10*time.Second, "expired", func() bool {
		in, err := n.GetSandbox(ctx, "ur")
		return err == nil && in.State == StateExpired
	})
	wantUsage("expired", false)
}
