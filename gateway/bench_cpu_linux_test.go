package gateway

import (
	"bytes"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"

	"golang.org/x/sys/unix"
)

// BenchmarkExecCPU measures where the CPU of one exec of `true` goes with 8 concurrent
// clients: raw os/exec, the namespace driver and the local driver, in rotated phases.
// For each it reports the wall time per exec and the CPU per exec of this process
// (client and server together), of the namespace driver's init (its own threads) and of
// the `true` processes (the reaped children of whoever forks them), and the context
// switches of this process and of the init per exec (each is a thread that slept and
// was woken: a wake-up between threads or processes, or the Go scheduler's sysmon
// polling while a thread blocks in a syscall). On a machine with
// C CPUs, 8-client throughput cannot beat C / (CPU per exec); the ratio of the CPU per
// exec to raw's bounds the throughput ratio the same way. Run it under perf to split
// this process's share, with SANDGATE_BENCH_ONLY=raw|ns|local to run one way alone
// (BENCHMARKS.md, "#14, third pass").
func BenchmarkExecCPU(b *testing.B) {
	ns, local := driverServers(b)
	const path, body = "/v1/sandboxes/bench/exec", `{"argv":["true"]}`
	const clients, perClient, phases = 8, 40, 6
	var nsKA, lKA [clients]*keepAliveClient
	for c := range clients {
		nsKA[c] = newKeepAliveClient(b, strings.TrimPrefix(ns.url, "http://"), "POST", path, testToken, body)
		lKA[c] = newKeepAliveClient(b, strings.TrimPrefix(local.url, "http://"), "POST", path, testToken, body)
	}
	if err := nsKA[0].do(); err != nil { // starts the init
		b.Fatal(err)
	}
	initPID := findInit(b, "bench")
	type way struct {
		name string
		run  func(int) error
	}
	ways := []way{
		{"raw", func(int) error { return exec.Command("true").Run() }},
		{"ns", func(c int) error { return nsKA[c].do() }},
		{"local", func(c int) error { return lKA[c].do() }},
	}
	var wall [3]time.Duration
	var self, kids, init_ [3]time.Duration
	var mallocs, allocBytes [3]uint64        // this process's heap allocations (client and server)
	var selfCS, initCS [3]int64              // context switches
	only := os.Getenv("SANDGATE_BENCH_ONLY") // one way alone, for a profiler: raw, ns or local
	for i := 0; i < phases; i++ {
		for j := range ways {
			k := (i + j) % len(ways)
			if only != "" && ways[k].name != only {
				wall[k], self[k], kids[k] = 1, 1, 1
				continue
			}
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			s0, k0, i0 := selfCPU(b), kidsCPU(b), procCPU(b, initPID)
			c0, ic0 := selfSwitches(b), procSwitches(b, initPID)
			wall[k] += clientPhase(b, clients, perClient, ways[k].run)
			s1, k1, i1 := selfCPU(b), kidsCPU(b), procCPU(b, initPID)
			selfCS[k] += selfSwitches(b) - c0
			initCS[k] += procSwitches(b, initPID) - ic0
			goruntime.ReadMemStats(&m1)
			mallocs[k] += m1.Mallocs - m0.Mallocs
			allocBytes[k] += m1.TotalAlloc - m0.TotalAlloc
			self[k] += s1 - s0
			kids[k] += k1 - k0
			init_[k] += i1.own - i0.own
			kids[k] += i1.kids - i0.kids // the namespace driver's `true`s are the init's children
		}
	}
	n := float64(clients * perClient * phases)
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	for k, w := range ways {
		b.ReportMetric(us(wall[k]), w.name+"-wall-µs/exec")
		b.ReportMetric(us(self[k]), w.name+"-self-cpu-µs/exec")
		b.ReportMetric(float64(selfCS[k])/n, w.name+"-self-cs/exec")
		b.ReportMetric(us(kids[k]), w.name+"-true-cpu-µs/exec")
		if w.name == "ns" {
			b.ReportMetric(us(init_[k]), w.name+"-init-cpu-µs/exec")
			b.ReportMetric(float64(initCS[k])/n, w.name+"-init-cs/exec")
		}
		b.ReportMetric(us(self[k]+kids[k]+init_[k]), w.name+"-total-cpu-µs/exec")
		b.ReportMetric(float64(mallocs[k])/n, w.name+"-allocs/exec")
		b.ReportMetric(float64(allocBytes[k])/n, w.name+"-B/exec")
	}
	b.ReportMetric(float64(wall[0])/float64(wall[1]), "ns/raw-8c")
	b.ReportMetric(float64(wall[0])/float64(wall[2]), "local/raw-8c")
	b.ReportMetric(float64(self[1]+kids[1]+init_[1])/float64(self[0]+kids[0]), "ns/raw-cpu")
	b.ReportMetric(float64(self[2]+kids[2])/float64(self[0]+kids[0]), "local/raw-cpu")
}

// selfCPU is this process's user and system CPU so far.
func selfCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return tvDur(ru.Utime) + tvDur(ru.Stime)
}

// kidsCPU is the CPU of this process's reaped children so far.
func kidsCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return tvDur(ru.Utime) + tvDur(ru.Stime)
}

func tvDur(tv unix.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}

// procTimes is a process's own CPU and its reaped children's, from /proc/<pid>/stat
// (clock ticks: 10 ms granularity, enough over thousands of execs).
type procTimes struct{ own, kids time.Duration }

func procCPU(tb testing.TB, pid int) procTimes {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	tick := func(i int) time.Duration { // f[0] is field 3 (state)
		v, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return time.Duration(v) * (time.Second / 100)
	}
	return procTimes{own: tick(14) + tick(15), kids: tick(16) + tick(17)}
}

// selfSwitches is this process's context switches so far (all its threads', voluntary
// and not).
func selfSwitches(tb testing.TB) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Nvcsw + ru.Nivcsw
}

// procSwitches is the context switches so far of process pid's live threads.
func procSwitches(tb testing.TB, pid int) int64 {
	n, err := proctest.ContextSwitches("/proc", pid)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
