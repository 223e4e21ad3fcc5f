package nsinit

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"
)

// BenchmarkSpawnConcurrent is the init alone under eight clients: each spawns `true`
// through one init into a cgroup and waits for it as the runtime's exec does (a
// NoWait spawn with a status pipe), in phases rotated with eight clients of a raw
// exec.Command("true").Run(). It reports the throughput ratio, and the init's CPU and
// context switches per spawn (its live threads'), which show what the init's own
// scheduling costs without an HTTP server's noise around it, and how much private
// memory the spawns left the init with.
//
//	go test -run '^$' -bench BenchmarkSpawnConcurrent -benchtime=1x ./runtime/internal/nsinit/
func BenchmarkSpawnConcurrent(b *testing.B) {
	_, home, procs, dir := benchCgroups(b)
	in := startInit(b, Config{Cgroup: home})
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	ctx := testCtx(b)
	spawn := func() {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		req := SpawnRequest{Argv: []string{"true"}, Stdin: null, Stdout: null, Stderr: null,
			Cgroup: procs, CgroupDir: dir, Status: w, NoWait: true}
		_, err = in.Spawn(ctx, req)
		_ = w.Close()
		if err != nil {
			b.Fatal(err)
		}
		st, ok, err := ReadStatus(int(r.Fd())) // r is blocking: waits for the exit
		if err != nil || !ok || st.Code != 0 {
			b.Fatal(st, ok, err)
		}
	}
	raw := func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	spawn()
	mem0 := privateKiB(b, in.PID())
	const clients, perClient, phases = 8, 50, 6
	phase := func(run func()) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for range perClient {
					run()
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var rawD, nsD time.Duration
	var cpu time.Duration
	var cs int64
	for b.Loop() {
		for i := range phases {
			if i%2 == 0 {
				rawD += phase(raw)
			}
			c0, s0 := initCPU(b, in.PID()), initSwitches(b, in.PID())
			nsD += phase(spawn)
			cpu += initCPU(b, in.PID()) - c0
			cs += initSwitches(b, in.PID()) - s0
			if i%2 == 1 {
				rawD += phase(raw)
			}
		}
	}
	n := float64(clients * perClient * phases * b.N)
	b.ReportMetric(float64(rawD)/float64(nsD), "spawn/raw-8c")
	b.ReportMetric(float64(cpu.Microseconds())/n, "init-cpu-µs/spawn")
	b.ReportMetric(float64(cs)/n, "init-cs/spawn")
	// What the spawns left in the init's private memory (the async spawns' slots).
	b.ReportMetric(float64(privateKiB(b, in.PID())-mem0), "init-private-KiB-added")
}

// initCPU is process pid's own CPU (utime + stime, clock ticks).
func initCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	var sum int64
	for _, i := range []int{14, 15} { // f[0] is field 3
		v, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		sum += v
	}
	return time.Duration(sum) * (time.Second / 100)
}

// initSwitches is the context switches so far of process pid's live threads.
func initSwitches(tb testing.TB, pid int) int64 {
	n, err := proctest.ContextSwitches("/proc", pid)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
