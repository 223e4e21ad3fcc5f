package nsinit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkTrueCPU is the CPU of `true` itself, the child, spawned by eight clients
// through one init as the gateway's namespace driver spawns an exec (a user namespace,
// a delegated cgroup tree the child is cloned into, NoWait with a status pipe, the
// sandbox's PATH and HOME), against eight clients of a raw exec.Command("true").Run()
// with the same environment, in alternating phases. The child's CPU is the reaped
// children's rusage of whoever forked them: the init's (/proc/<pid>/stat, clock ticks)
// or this process's. It includes what the child does between its clone and its exec
// (the spawn path's steps: Go's resets every signal handler, ours adds the seccomp
// filter that refuses clone3), the exec, the dynamic loader's work and the exit.
// NSINIT_TRUECPU_ONLY=raw|ns runs one way alone, for a profiler (BENCHMARKS.md, "#14,
// seventh pass").
//
//	go test -run '^$' -bench BenchmarkTrueCPU -benchtime=1x ./runtime/internal/nsinit/
func BenchmarkTrueCPU(b *testing.B) {
	ids := DefaultIDRange
	home, procs, dir := delegatedGroups(b, ids)
	in := startInit(b, Config{Cgroup: home, UserNS: &ids})
	if cloneBuilt && in.SpawnPath() != SpawnCloneInto {
		b.Fatalf("SpawnPath = %v, want %v", in.SpawnPath(), SpawnCloneInto)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	ctx := testCtx(b)
	env := []string{"PATH=" + DefaultPath, "HOME=/workspace"}
	spawn := func() {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		req := SpawnRequest{Argv: []string{"true"}, Env: env, Stdin: null, Stdout: null, Stderr: null,
			Cgroup: procs, CgroupDir: dir, Status: w, NoWait: true}
		_, err = in.Spawn(ctx, req)
		_ = w.Close()
		if err != nil {
			b.Fatal(err)
		}
		st, ok, err := ReadStatus(int(r.Fd()))
		if err != nil || !ok || st.Code != 0 {
			b.Fatal(st, ok, err)
		}
	}
	raw := func() {
		cmd := exec.Command("/usr/bin/true")
		cmd.Env = env
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	spawn()
	raw()
	b.Logf("init pid %d, this process %d", in.PID(), os.Getpid()) // to split a system-wide profile
	const clients, perClient, phases = 8, 100, 6
	phase := func(run func()) {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range perClient {
					run()
				}
			})
		}
		wg.Wait()
	}
	var rawU, rawS, nsU, nsS time.Duration
	only := os.Getenv("NSINIT_TRUECPU_ONLY")
	for b.Loop() {
		for i := range phases {
			if i%2 == 0 && only != "ns" {
				u0, s0 := ownKids(b)
				phase(raw)
				u1, s1 := ownKids(b)
				rawU, rawS = rawU+u1-u0, rawS+s1-s0
			}
			if only != "raw" {
				u0, s0 := initKids(b, in.PID())
				phase(spawn)
				u1, s1 := initKids(b, in.PID())
				nsU, nsS = nsU+u1-u0, nsS+s1-s0
			}
			if i%2 == 1 && only != "ns" {
				u0, s0 := ownKids(b)
				phase(raw)
				u1, s1 := ownKids(b)
				rawU, rawS = rawU+u1-u0, rawS+s1-s0
			}
		}
	}
	n := float64(clients * perClient * phases * b.N)
	if only == "" || only == "raw" {
		b.ReportMetric(float64((rawU+rawS).Microseconds())/n, "raw-true-cpu-µs/exec")
	}
	if only == "" || only == "ns" {
		b.ReportMetric(float64((nsU+nsS).Microseconds())/n, "ns-true-cpu-µs/exec")
	}
	if only == "" {
		b.ReportMetric(float64(nsU+nsS)/float64(rawU+rawS), "ns/raw-true-cpu")
	}
}

// delegatedGroups makes a home and a tree group under a test cgroup, delegated to the
// user namespace's root as the runtime delegates them (cgroup.procs of both and of
// their parent), and opens the tree's cgroup.procs and directory, closed at cleanup.
func delegatedGroups(b *testing.B, ids IDRange) (home string, procs, dir *os.File) {
	base := testCgroup(b)
	home, tree := filepath.Join(base, "home"), filepath.Join(base, "tree")
	for _, d := range []string{home, tree} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{base, home, tree} {
		if err := os.Chown(filepath.Join(d, "cgroup.procs"), int(ids.HostUID), int(ids.HostGID)); err != nil {
			b.Fatal(err)
		}
	}
	procs, err := os.OpenFile(filepath.Join(tree, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = procs.Close() })
	if dir, err = os.Open(tree); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dir.Close() })
	return home, procs, dir
}

// ownKids is this process's reaped children's user and system CPU.
func ownKids(tb testing.TB) (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// initKids is process pid's reaped children's user and system CPU (clock ticks).
func initKids(tb testing.TB, pid int) (user, sys time.Duration) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	tick := func(i int) time.Duration { // f[0] is field 3
		v, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return time.Duration(v) * (time.Second / 100)
	}
	return tick(16), tick(17)
}
