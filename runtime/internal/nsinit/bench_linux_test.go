package nsinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSpawn times a spawn of `true` through a running init, waited for as the
// runtime's exec waits (a poll on Child.ExitFD, then Wait), without and with a cgroup
// to start in (the runtime's tree groups, handed over as the runtime does: cgroup.procs
// and directory), and the latter on an init forced onto the fallback spawn path
// (ForkExec and cgroup moves), against a raw exec.Command("true").Run() in rotated
// order each round, and reports the p50s and their ratios to the raw exec.
//
//	go test -run '^$' -bench BenchmarkSpawn -benchtime=1x ./runtime/internal/nsinit/
func BenchmarkSpawn(b *testing.B) {
	base, home, procs, dir := benchCgroups(b)
	in := startInit(b, Config{Cgroup: home})
	forkHome := filepath.Join(base, "fork-home")
	if err := os.Mkdir(forkHome, 0o755); err != nil {
		b.Fatal(err)
	}
	fork := startInit(b, Config{Cgroup: forkHome, ForceFork: true})
	ctx := testCtx(b)
	spawn := func(in *Init, cg *os.File) func() {
		return func() {
			req := SpawnRequest{Argv: []string{"true"}, Cgroup: cg}
			if cg != nil {
				req.CgroupDir = dir
			}
			ch, err := in.Spawn(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			// As the runtime's exec waits: a poll on ExitFD, then Wait for the status.
			fd, err := ch.ExitFD()
			if err != nil {
				b.Fatal(err)
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(pfd, -1); !errors.Is(err, unix.EINTR) {
					break
				}
			}
			_ = unix.Close(fd)
			if st, err := ch.Wait(ctx); err != nil || st.Code != 0 {
				b.Fatal(st, err)
			}
		}
	}
	ways := []func(){
		func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		},
		spawn(in, nil),
		spawn(in, procs),
		spawn(fork, procs),
	}
	for _, w := range ways {
		w()
	}
	const rounds = 200
	took := make([][]time.Duration, len(ways))
	for b.Loop() {
		for i := 0; i < rounds; i++ {
			for j := range ways {
				k := (i + j) % len(ways)
				start := time.Now()
				ways[k]()
				took[k] = append(took[k], time.Since(start))
			}
		}
	}
	raw := float64(p(took[0], 50))
	b.ReportMetric(raw/1e3, "raw-p50-µs")
	b.ReportMetric(float64(p(took[1], 50))/1e3, "spawn-p50-µs")
	b.ReportMetric(float64(p(took[2], 50))/1e3, "spawn-cgroup-p50-µs")
	b.ReportMetric(float64(p(took[1], 50))/raw, "spawn/raw")
	b.ReportMetric(float64(p(took[2], 50))/raw, "spawn-cgroup/raw")
	b.ReportMetric(float64(p(took[3], 50))/1e3, "fork-cgroup-p50-µs")
	b.ReportMetric(float64(p(took[3], 50))/raw, "fork-cgroup/raw")
	b.ReportMetric(float64(p(took[2], 50))/float64(p(took[3], 50)), "spawn-cgroup/fork-cgroup")
}

// benchCgroups makes a test cgroup with a "home" group for an init and a "tree"
// group for its spawns, and opens the tree's cgroup.procs and directory as the
// runtime hands them over; they are closed at cleanup.
func benchCgroups(b testing.TB) (base, home string, procs, dir *os.File) {
	base = testCgroup(b)
	home, tree := filepath.Join(base, "home"), filepath.Join(base, "tree")
	for _, d := range []string{home, tree} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	procs, err := os.OpenFile(filepath.Join(tree, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { procs.Close() })
	if dir, err = os.Open(tree); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dir.Close() })
	return base, home, procs, dir
}
