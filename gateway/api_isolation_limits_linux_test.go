package gateway

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIsolationForkBomb: a sandbox whose budget allows 32 pids runs a counting fork
// loop (a bash fork bomb retries on EAGAIN and would hide the limit): forks fail once
// the sandbox's pids cgroup is full, far before the loop's 500, and once the command
// has ended (its background children killed with it) the sandbox, another sandbox and
// the server answer.
func TestIsolationForkBomb(t *testing.T) {
	t.Parallel()
	const pids = 32
	ts := isoServer(t, &serverOptions{config: func(c *Config) { c.Defaults.Pids = pids }})
	b := newIsoBox(t, ts, "iso-forks")
	other := newIsoBox(t, ts, "iso-calm")
	if got := readInt(t, b.cgroupFile("pids", "pids.max")); got != pids {
		t.Fatalf("pids.max of the sandbox's group is %d; want the budget's %d", got, pids)
	}
	bystander := other.start("exec sleep 1000")
	// dash (/bin/sh) gives up at the first failed fork; the count says how far it got.
	res := b.exec(`i=0; while [ $i -lt 500 ]; do sleep 30 & i=$((i+1)); echo $i > count; done`)
	count, err := strconv.Atoi(strings.TrimSpace(b.sh("cat count")))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the loop started %d children of a %d pids budget; exit %d, stderr %q", count, pids, res.ExitCode, res.Stderr)
	if res.ExitCode == 0 || !strings.Contains(strings.ToLower(res.Stderr), "fork") || count >= pids {
		t.Fatalf("the fork loop under pids.max %d: exit %d, %d children, stderr %q; want a failed fork before %d", pids, res.ExitCode, count, res.Stderr, pids)
	}
	procs := b.cgroupFile("pids", "cgroup.procs")
	eventually(t, 20*time.Second, "the loop's children to be killed (only the init left in the sandbox's pids group)", func() bool {
		raw, err := os.ReadFile(procs)
		return err == nil && strings.TrimSpace(string(raw)) == strconv.Itoa(b.init)
	})
	if got := b.sh("echo alive"); got != "alive\n" {
		t.Fatalf("the sandbox after the fork loop: %q", got)
	}
	if got := other.sh("echo alive"); got != "alive\n" {
		t.Fatalf("another sandbox after the fork loop: %q", got)
	}
	if p := other.process(bystander.ID, 0); p.Status != "running" {
		t.Fatalf("another sandbox's process after the fork loop: %+v", p)
	}
	ts.must(http.StatusOK, "GET", "/healthz", nil)
}

// TestIsolationMemoryHog: a process of a sandbox with a 64 MiB memory budget that
// allocates 256 MiB is killed by the OOM killer inside the sandbox's memory cgroup
// (SIGKILL, counted in its oom_kill), and the sandbox, another sandbox's running
// process and the server are unaffected.
func TestIsolationMemoryHog(t *testing.T) {
	t.Parallel()
	const limit = 64 << 20
	ts := isoServer(t, &serverOptions{config: func(c *Config) { c.Defaults.MemoryBytes = limit }})
	b := newIsoBox(t, ts, "iso-hog")
	other := newIsoBox(t, ts, "iso-frugal")
	if got := readInt(t, b.cgroupFile("memory", "memory.limit_in_bytes")); got != limit {
		t.Fatalf("memory.limit_in_bytes of the sandbox's group is %d; want the budget's %d", got, limit)
	}
	oomBefore := oomKills(t, b)
	bystander := other.start("exec sleep 1000")

	var hog processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+b.id+"/processes", map[string]any{
		"argv": []string{"python3", "-c", "b = b'x' * (256 << 20); print(len(b))"},
	}).json(t, &hog)
	p := b.process(hog.ID, 30*time.Second)
	if p.Status != "exited" || p.Signal == nil || *p.Signal != "SIGKILL" {
		t.Fatalf("the memory hog: status %s, exit %v, signal %v; want killed by SIGKILL", p.Status, p.ExitCode, p.Signal)
	}
	if got := oomKills(t, b); got <= oomBefore {
		t.Fatalf("oom_kill of the sandbox's memory group is %d (was %d): the hog was not killed by the OOM killer", got, oomBefore)
	}
	if got := b.sh("echo alive"); got != "alive\n" {
		t.Fatalf("the sandbox after the OOM kill: %q", got)
	}
	if p := other.process(bystander.ID, 0); p.Status != "running" {
		t.Fatalf("another sandbox's process after the OOM kill: %+v", p)
	}
	if got := other.sh("echo alive"); got != "alive\n" {
		t.Fatalf("another sandbox after the OOM kill: %q", got)
	}
	ts.must(http.StatusOK, "GET", "/healthz", nil)
}

// oomKills returns the oom_kill count of the sandbox's v1 memory group.
func oomKills(t testing.TB, b *isoBox) int64 {
	t.Helper()
	raw, err := os.ReadFile(b.cgroupFile("memory", "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("memory.oom_control has no oom_kill: %q", raw)
	return 0
}

// TestIsolationDiskQuota: with disk images, a sandbox with a 16 MiB disk budget that
// writes 64 MiB gets ENOSPC, while another sandbox writes, through exec and the files
// API, and the server's own storage keeps working. The data dir is a 128 MiB tmpfs,
// so nothing can fill the machine's disk.
func TestIsolationDiskQuota(t *testing.T) {
	t.Parallel()
	data := smallDataDir(t, 128<<20)
	ts := isoServer(t, &serverOptions{config: func(c *Config) {
		c.DataDir = data
		c.DiskImages = true
		c.Defaults.DiskBytes = 16 << 20
	}})
	b := newIsoBox(t, ts, "iso-fill")
	other := newIsoBox(t, ts, "iso-room")
	res := b.exec("dd if=/dev/zero of=big bs=1M count=64")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("64 MiB into a 16 MiB workspace: exit %d, stderr %q; want ENOSPC", res.ExitCode, res.Stderr)
	}
	if got := other.sh("dd if=/dev/zero of=data bs=1M count=8 2>/dev/null && sync && wc -c < data"); strings.TrimSpace(got) != strconv.Itoa(8<<20) {
		t.Fatalf("8 MiB into the other sandbox: %q", got)
	}
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/"+other.id+"/files?path=more", strings.Repeat("y", 1<<20))
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+b.id+"/events", map[string]any{"type": "agent.full", "data": map[string]any{}})
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": isoID("iso-new")})
	// The full sandbox frees its space and writes again.
	if got := b.sh("rm big && echo ok > small && cat small"); got != "ok\n" {
		t.Fatalf("the sandbox after freeing its workspace: %q", got)
	}
}
