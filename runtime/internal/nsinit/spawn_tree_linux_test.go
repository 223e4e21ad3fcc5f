package nsinit

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSpawnExtraFiles(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	r, w := mustPipe(t)
	got := readAll(r)
	res := runReq(t, in, "", SpawnRequest{Argv: []string{"sh", "-c", "echo on-three >&3"}, Extra: []*os.File{w}})
	_ = w.Close()
	if res.status.Code != 0 || <-got != "on-three\n" {
		t.Fatalf("fd 3: status %v, stderr %q", res.status, res.stderr)
	}
}

// TestLeaderExitEndsItsGroup checks that what a spawned process left in its process
// group is killed when it exits, as the runtime's process trees end with their leader.
func TestLeaderExitEndsItsGroup(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ns := nsOf(t, in.PID())
	res := run(t, in, "", "sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")
	if res.status.Code != 0 {
		t.Fatalf("%v %q", res.status, res.stderr)
	}
	waitFor(t, "the background sleep to die with its shell", func() bool { return len(livePIDsIn(ns)) == 1 })
}

// TestSpawnIntoCgroup checks that a spawn naming a cgroup starts there with all it
// forks, a setsid daemon included, that the init returns to its own group, and that
// the group's cgroup.kill ends the daemon.
func TestSpawnIntoCgroup(t *testing.T) {
	t.Parallel()
	base := testCgroup(t)
	home, tree := filepath.Join(base, "home"), filepath.Join(base, "tree")
	for _, d := range []string{home, tree} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := startInit(t, Config{Cgroup: home})
	procs, err := os.OpenFile(filepath.Join(tree, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer procs.Close()
	res := runReq(t, in, "", SpawnRequest{Cgroup: procs, Argv: []string{"sh", "-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & d=$!
while read -r _ _ _ _ _ sid _ </proc/$d/stat && [ "$sid" != "$d" ]; do :; done; echo $d`}})
	if res.status.Code != 0 {
		t.Fatalf("%v %q", res.status, res.stderr)
	}
	if got := cgroupPIDs(t, home); !slices.Equal(got, []int{in.PID()}) {
		t.Fatalf("home group holds %v, want only the init %d", got, in.PID())
	}
	if got := cgroupPIDs(t, tree); len(got) != 1 {
		t.Fatalf("tree group holds %v, want the daemon alone (its shell exited)", got)
	}
	if err := os.WriteFile(filepath.Join(tree, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tree group to empty", func() bool { return len(cgroupPIDs(t, tree)) == 0 })
}

// testCgroup makes a cgroup2 group for the test under this process's own and removes
// it (and its children, once empty) when the test ends. It fails the test where there
// is no cgroup2 hierarchy.
func testCgroup(tb testing.TB) string {
	tb.Helper()
	mnt := cgroup2Mount(tb)
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		tb.Fatal(err)
	}
	rel := ""
	for _, l := range strings.Split(string(self), "\n") {
		if v, ok := strings.CutPrefix(l, "0::"); ok {
			rel = v
		}
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := filepath.Join(mnt, rel, "sandgate-nsinit-test-"+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatalf("cgroup2 group: %v", err)
	}
	tb.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() {
				waitRmdir(tb, filepath.Join(dir, e.Name()))
			}
		}
		waitRmdir(tb, dir)
	})
	return dir
}

func cgroup2Mount(tb testing.TB) string {
	tb.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if i := slices.Index(fields, "-"); i > 0 && i+1 < len(fields) && fields[i+1] == "cgroup2" {
			return fields[4]
		}
	}
	tb.Fatal("no cgroup2 hierarchy is mounted")
	return ""
}

func cgroupPIDs(tb testing.TB, dir string) []int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func waitRmdir(tb testing.TB, dir string) {
	deadline := time.Now().Add(testTimeout)
	for {
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			tb.Errorf("remove cgroup %s: %v", dir, err)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
