package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// treeGroups makes a home and a tree group under a test cgroup. With owner set it
// delegates, as the runtime does for a user namespace, the cgroup.procs of both and
// of their parent to the namespace's root.
func treeGroups(t *testing.T, owner *IDRange) (home, tree string) {
	t.Helper()
	base := testCgroup(t)
	home, tree = filepath.Join(base, "home"), filepath.Join(base, "tree")
	for _, d := range []string{home, tree} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if owner != nil {
		for _, d := range []string{base, home, tree} {
			if err := os.Chown(filepath.Join(d, "cgroup.procs"), int(owner.HostUID), int(owner.HostGID)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return home, tree
}

// openTree opens a group's cgroup.procs and directory, as the runtime hands them over.
func openTree(t *testing.T, dir string) (procs, d *os.File) {
	t.Helper()
	procs, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procs.Close() })
	if d, err = os.Open(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return procs, d
}

// cgroupPath returns the cgroup2 path in a /proc/<pid>/cgroup text.
func cgroupPath(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "0::"); ok {
			return v
		}
	}
	return ""
}

// filteredThreads counts the threads of pid that carry a seccomp filter.
func filteredThreads(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/status")
		if err == nil && strings.Contains(string(b), "\nSeccomp:\t2\n") {
			n++
		}
	}
	return n
}

// skipForced skips a test that picks its spawn paths itself when the suite is run
// with every init forced onto the fallback (NSINIT_TEST_FORK=1).
func skipForced(t *testing.T) {
	t.Helper()
	if os.Getenv("NSINIT_TEST_FORK") == "1" {
		t.Skip("NSINIT_TEST_FORK=1: every init is on the fallback path")
	}
}

// TestSpawnPathChosen checks which spawn path an init takes, that a process spawned on
// each starts in its tree's group (cat reads /proc/self/cgroup first thing), and that
// one thread of the init, the spawner, carries the filter. With a user namespace the
// init may clone into the groups only once they are delegated to its root.
func TestSpawnPathChosen(t *testing.T) {
	t.Parallel()
	skipForced(t)
	if !cloneBuilt {
		t.Skip("no own spawn path in this build")
	}
	tests := []struct {
		name     string
		fork     bool
		userNS   bool
		delegate bool
		want     SpawnPath
	}{
		{"own, into the group", false, false, false, SpawnCloneInto},
		{"own, user namespace, delegated", false, true, true, SpawnCloneInto},
		{"own, user namespace, not delegated", false, true, false, SpawnClone},
		{"fallback", true, false, false, SpawnFork},
		{"fallback, user namespace", true, true, false, SpawnFork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{ForceFork: tt.fork}
			if tt.userNS {
				ids := DefaultIDRange
				cfg.UserNS = &ids
			}
			var owner *IDRange
			if tt.delegate {
				owner = cfg.UserNS
			}
			if !tt.userNS && os.Getenv("NSINIT_TEST_USERNS") == "1" {
				// startInit gives the init DefaultIDRange's user namespace: the group
				// is delegated to it, so the case still clones into the group.
				ids := DefaultIDRange
				owner = &ids
			}
			home, tree := treeGroups(t, owner)
			cfg.Cgroup = home
			in := startInit(t, cfg)
			if got := in.SpawnPath(); got != tt.want {
				t.Fatalf("SpawnPath = %v, want %v", got, tt.want)
			}
			procs, dir := openTree(t, tree)
			res := runReq(t, in, "", SpawnRequest{Argv: []string{"cat", "/proc/self/cgroup"}, Cgroup: procs, CgroupDir: dir})
			rel := strings.TrimPrefix(tree, cgroup2Mount(t))
			if res.status.Code != 0 || cgroupPath(res.stdout) != rel {
				t.Fatalf("the process ran in %q (%v, %q), want %q", cgroupPath(res.stdout), res.status, res.stderr, rel)
			}
			if got := cgroupPIDs(t, home); !slices.Equal(got, []int{in.PID()}) {
				t.Fatalf("home group holds %v, want only the init %d", got, in.PID())
			}
			if got := filteredThreads(t, in.PID()); got != 1 {
				t.Fatalf("%d of the init's threads carry the seccomp filter, want 1", got)
			}
		})
	}
}

// TestSpawnIntoFrozenGroup checks that the init never enters a spawn's group on its own
// path: with the tree's group frozen, the process is cloned into it (and stays frozen
// before its first instruction) while the init stays in its own group, unfrozen. The
// fallback path would write the init itself into the frozen group.
func TestSpawnIntoFrozenGroup(t *testing.T) {
	t.Parallel()
	home, tree := treeGroups(t, nil)
	in := startInit(t, Config{Cgroup: home})
	if in.SpawnPath() != SpawnCloneInto {
		t.Skipf("the init spawns on the %v path", in.SpawnPath())
	}
	thaw := freezeTree(t, tree)
	defer thaw()
	procs, dir := openTree(t, tree)
	done := make(chan result, 1)
	go func() {
		r, w := mustPipe(t)
		defer r.Close()
		ch, err := in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"true"}, Cgroup: procs, CgroupDir: dir, Stdout: w, Stderr: w})
		_ = w.Close()
		if err != nil {
			done <- result{stderr: err.Error(), status: ExitStatus{Code: -2}}
			return
		}
		st, err := ch.Wait(testCtx(t))
		if err != nil {
			st.Code = -3
		}
		done <- result{status: st}
	}()
	waitFor(t, "a process in the frozen group", func() bool { return len(cgroupPIDs(t, tree)) > 0 })
	if got := cgroupPIDs(t, tree); slices.Contains(got, in.PID()) || len(got) != 1 {
		t.Fatalf("the frozen group holds %v; want the spawned process alone, not the init %d", got, in.PID())
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID()) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cgroupPath(string(b)), strings.TrimPrefix(home, cgroup2Mount(t)); got != want {
		t.Fatalf("the init is in %q, want its own group %q", got, want)
	}
	thaw()
	if r := <-done; r.status.Code != 0 {
		t.Fatalf("the spawn ended with %v %s", r.status, r.stderr)
	}
}

// TestSpawnedProcessState checks, on both spawn paths, what a process gets from the
// init: default signal handling and an empty mask, exactly the fds asked for, the
// seccomp filter, the ids of Config.UID and GID, a controlling terminal on a PTY, and
// the same errors when it cannot start.
func TestSpawnedProcessState(t *testing.T) {
	t.Parallel()
	skipForced(t)
	for _, tc := range []struct{ fork, noWait bool }{{false, false}, {false, true}, {true, false}} {
		fork := tc.fork
		t.Run("fork="+strconv.FormatBool(fork)+",nowait="+strconv.FormatBool(tc.noWait), func(t *testing.T) {
			t.Parallel()
			if !fork && !cloneBuilt {
				t.Skip("no own spawn path in this build")
			}
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			in := startInit(t, Config{Workspace: ws, ForceFork: fork, UID: 1000, GID: 1001})
			if (in.SpawnPath() == SpawnFork) != fork {
				t.Fatalf("SpawnPath = %v with ForceFork %v", in.SpawnPath(), fork)
			}
			testSpawnedProcessState(t, in, tc.noWait)
		})
	}
}

// testSpawnedProcessState checks the state of processes spawned by in, all of them
// NoWait (the runtime's execs: on the own path, started async) if noWait.
func testSpawnedProcessState(t *testing.T, in *Init, noWait bool) {
	ctx := testCtx(t)
	run := func(t *testing.T, in *Init, stdin string, argv ...string) result {
		t.Helper()
		return runReq(t, in, stdin, SpawnRequest{Argv: argv, NoWait: noWait})
	}
	t.Run("signals", func(t *testing.T) {
		// cat, which sets no handler of its own (grep does, for SIGSEGV).
		res := run(t, in, "", "cat", "/proc/self/status")
		var got []string
		for _, l := range strings.Split(res.stdout, "\n") {
			if strings.HasPrefix(l, "SigBlk:") || strings.HasPrefix(l, "SigIgn:") || strings.HasPrefix(l, "SigCgt:") {
				got = append(got, l)
			}
		}
		want := []string{"SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000", "SigCgt:\t0000000000000000"}
		if !slices.Equal(got, want) {
			t.Fatalf("signal state %q (%q), want %q", got, res.stderr, want)
		}
	})
	t.Run("filter and ids", func(t *testing.T) {
		res := run(t, in, "", "sh", "-c", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; id -u; id -G; unshare -U true 2>&1; "+
			strings.Join(quoteAll(perlSyscall(unix.SYS_CLONE3, 0)), " "))
		want := "NoNewPrivs:\t1\nSeccomp:\t2\n1000\n1001\nunshare: unshare failed: Operation not permitted\n" + strconv.Itoa(int(unix.ENOSYS))
		if res.stdout != want {
			t.Fatalf("got %q (%q), want %q", res.stdout, res.stderr, want)
		}
	})
	t.Run("fds", func(t *testing.T) {
		// Two extra fds, seen from inside once the exec is done (the parent of a vfork
		// resumes at the exec's point of no return, before close-on-exec fds are
		// closed); ls reads the directory on the next fd, 5.
		r1, w1 := mustPipe(t)
		defer r1.Close()
		defer w1.Close()
		res := runReq(t, in, "", SpawnRequest{Argv: []string{"ls", "/proc/self/fd"}, Extra: []*os.File{w1, r1}, NoWait: noWait})
		if got := strings.Fields(res.stdout); !slices.Equal(got, []string{"0", "1", "2", "3", "4", "5"}) {
			t.Fatalf("the process has fds %v (%q), want 0 to 4 and ls's own", got, res.stderr)
		}
	})
	t.Run("pty", func(t *testing.T) {
		if noWait {
			t.Skip("the runtime's execs have no PTY")
		}
		m, s := openPTY(t)
		ch, err := in.Spawn(ctx, SpawnRequest{TTY: s, Argv: []string{"sh", "-c", "read -r p c st pp pg sid tty _ </proc/self/stat; echo \"$p $sid $tty.\""}})
		_ = s.Close()
		if err != nil {
			t.Fatal(err)
		}
		out := readUntil(t, m, ".")
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(out), "."))
		if len(f) != 3 || f[0] != f[1] || f[2] == "0" {
			t.Fatalf("pid, session and tty_nr %q: want a session leader with a controlling tty", out)
		}
		if st, err := ch.Wait(ctx); err != nil || st.Code != 0 {
			t.Fatalf("Wait = %v, %v", st, err)
		}
	})
	t.Run("start errors", func(t *testing.T) {
		// An exec that fails reads as it did with ForkExec on both paths, word for word.
		for _, tc := range []struct {
			argv  []string
			dir   string
			want  error
			exact bool
		}{
			{[]string{"/no/such/program"}, "", unix.ENOENT, true},
			{[]string{"no-such-program"}, "", unix.ENOENT, false},
			{[]string{"/workspace/noexec"}, "", unix.EACCES, true},
			{[]string{"/workspace"}, "", unix.EACCES, true},
			{[]string{"true"}, "no-such-dir", unix.ENOENT, false},
		} {
			err := spawnErr(t, in, SpawnRequest{Argv: tc.argv, Dir: tc.dir, NoWait: noWait})
			if !errors.Is(err, tc.want) {
				t.Errorf("Spawn %q in %q = %v, want %v", tc.argv, tc.dir, err, tc.want)
				continue
			}
			a := tc.argv[0]
			want := "failed to spawn " + a + ": failed to start " + a + ": " + tc.want.Error()
			if noWait {
				// Wait's error: the same, with ErrNotStarted between.
				want = "failed to spawn " + a + ": " + ErrNotStarted.Error() + ": failed to start " + a + ": " + tc.want.Error()
			}
			if tc.exact && err.Error() != want {
				t.Errorf("Spawn %q = %q, want %q", tc.argv, err, want)
			}
		}
	})
}

// spawnErr spawns req and returns why it could not start: Spawn's error, or with
// NoWait, Wait's (the status pipe then ends without a status).
func spawnErr(t *testing.T, in *Init, req SpawnRequest) error {
	t.Helper()
	var r *os.File
	if req.NoWait {
		r, req.Status = mustPipe(t)
		defer r.Close()
	}
	ch, err := in.Spawn(testCtx(t), req)
	if req.Status != nil {
		_ = req.Status.Close()
	}
	if err != nil || !req.NoWait {
		if err == nil {
			_, _ = ch.Wait(testCtx(t))
		}
		return err
	}
	if st, ok, err := ReadStatus(int(r.Fd())); err != nil || ok {
		t.Fatalf("the status pipe of a start that should fail: %+v, %v, %v", st, ok, err)
	}
	_, err = ch.Wait(testCtx(t))
	return err
}

// quoteAll quotes each argument for sh.
func quoteAll(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// freezeTree freezes the cgroup tree and returns thaw, which thaws it (once; later
// calls do nothing), so a test can thaw it mid-way and still defer it.
func freezeTree(t *testing.T, tree string) (thaw func()) {
	t.Helper()
	set := func(v string) error {
		return os.WriteFile(filepath.Join(tree, "cgroup.freeze"), []byte(v), 0)
	}
	if err := set("1"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := set("0"); err != nil {
				t.Error(err)
			}
		})
	}
}
