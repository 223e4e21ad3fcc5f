package nsinit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMeasure reports what an init costs, each figure beside a baseline measured in the
// same run (this VM is shared and slow at exec, so only ratios compare). It is slow and
// only runs with NSINIT_MEASURE=1:
//
//	NSINIT_MEASURE=1 go test -run TestMeasure -v ./runtime/internal/nsinit/
//
// NSINIT_MEASURE_BIN=path runs a built sandgate (or any binary that calls Main) as the
// init instead of the test binary.
func TestMeasure(t *testing.T) {
	if os.Getenv("NSINIT_MEASURE") != "1" {
		t.Skip("set NSINIT_MEASURE=1 to measure")
	}
	if bin := os.Getenv("NSINIT_MEASURE_BIN"); bin != "" {
		initBinary = bin // e.g. a built sandgate, whose main runs the init
		t.Logf("init binary: %s", bin)
	}
	ctx := testCtx(t)
	ws := t.TempDir()
	runTrue := func() time.Duration {
		t0 := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	var start, stop, base []time.Duration
	for i := 0; i < 20; i++ {
		base = append(base, runTrue())
		t0 := time.Now()
		in, err := Start(ctx, Config{ID: "sb-measure", Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		start = append(start, time.Since(t0))
		t0 = time.Now()
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		stop = append(stop, time.Since(t0))
	}
	t.Logf("Start p50 %v (p90 %v), Close p50 %v; exec true p50 %v; Start/exec = %.2f",
		p(start, 50), p(start, 90), p(stop, 50), p(base, 50), ratio(p(start, 50), p(base, 50)))

	in := startInit(t, Config{Workspace: ws})
	var through, direct []time.Duration
	for i := 0; i < 50; i++ {
		direct = append(direct, runTrue())
		t0 := time.Now()
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := ch.Wait(ctx); err != nil || st.Code != 0 {
			t.Fatal(st, err)
		}
		through = append(through, time.Since(t0))
	}
	t.Logf("true through the init p50 %v (p90 %v); exec.Command(true).Run p50 %v (p90 %v); ratio %.2f",
		p(through, 50), p(through, 90), p(direct, 50), p(direct, 90), ratio(p(through, 50), p(direct, 50)))

	// A syscall-heavy program (dd copying one byte at a time: two syscalls a byte), in
	// the sandbox and outside, alternating: the CPU it takes (the shell's reaped
	// children's, in clock ticks) shows what the seccomp filter and the namespaces add
	// per syscall. The kernel caches the filter's allow for every syscall but clone
	// (TestFilterActionCache), so the two should be level.
	const dd = "dd if=/dev/zero of=/dev/null bs=1 count=1000000 status=none; cat /proc/$$/stat"
	var ddIn, ddOut []time.Duration
	for i := 0; i < 7; i++ {
		out, err := exec.Command("sh", "-c", dd).Output()
		if err != nil {
			t.Fatal(err)
		}
		ddOut = append(ddOut, childTicks(t, string(out)))
		res := run(t, in, "", "sh", "-c", dd)
		if res.status.Code != 0 {
			t.Fatalf("dd in the sandbox: %+v", res)
		}
		ddIn = append(ddIn, childTicks(t, res.stdout))
	}
	t.Logf("2,000,000 syscalls (dd bs=1), CPU p50 in the sandbox %v, outside %v; ratio %.3f",
		p(ddIn, 50), p(ddOut, 50), ratio(p(ddIn, 50), p(ddOut, 50)))

	sleep := exec.Command("sleep", "1000")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	ip, sp := privateKiB(t, in.PID()), privateKiB(t, sleep.Process.Pid)
	t.Logf("idle init private memory %d KiB; a host sleep %d KiB; ratio %.1f", ip, sp, float64(ip)/float64(sp))
}

func p(ds []time.Duration, pct int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*pct/100]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// privateKiB sums Private_Clean and Private_Dirty of a process's smaps_rollup.
func privateKiB(t testing.TB, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && (fs[0] == "Private_Clean:" || fs[0] == "Private_Dirty:") {
			n, _ := strconv.Atoi(fs[1])
			total += n
		}
	}
	return total
}

// childTicks is the CPU of the reaped children (cutime + cstime) in a /proc/<pid>/stat
// line.
func childTicks(t *testing.T, stat string) time.Duration {
	t.Helper()
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
	var sum int64
	for _, i := range []int{16, 17} { // f[0] is field 3
		v, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			t.Fatalf("stat %q: %v", stat, err)
		}
		sum += v
	}
	return time.Duration(sum) * (time.Second / 100)
}
