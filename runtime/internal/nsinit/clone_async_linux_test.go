package nsinit

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// noWait starts argv as the runtime's exec does (NoWait, with a status pipe) and
// returns the Child and the pipe's read end (closed at cleanup).
func noWait(t *testing.T, in *Init, req SpawnRequest) (*Child, *os.File) {
	t.Helper()
	r, w := mustPipe(t)
	t.Cleanup(func() { _ = r.Close() })
	req.Status, req.NoWait = w, true
	ch, err := in.Spawn(testCtx(t), req)
	_ = w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return ch, r
}

// readStatus waits (bounded) for the status on a NoWait spawn's pipe; ok false if the
// pipe ended without one.
func readStatus(t *testing.T, r *os.File) (ExitStatus, bool) {
	t.Helper()
	if !pollIn(t, int(r.Fd()), testTimeout) {
		t.Fatal("status pipe neither readable nor hung up")
	}
	st, ok, err := ReadStatus(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return st, ok
}

// TestAsyncSpawnFailures checks that a NoWait spawn whose child fails after the clone
// (the spawner no longer waits to see it) is answered as before: no status on its
// pipe, and Wait returns ErrNotStarted with the cause, from the step that failed. The
// rounds, more than the slots of spawns in flight, alternate with successful ones, so
// slots freed by an exec and by the reaper are both reused.
func TestAsyncSpawnFailures(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	tests := []struct {
		name  string
		req   SpawnRequest
		errno syscall.Errno
		what  string // the failed step's words in the error, "" for the exec's own
	}{
		{"no such file", SpawnRequest{Argv: []string{"/no/such/program"}}, unix.ENOENT, ""},
		{"not executable", SpawnRequest{Argv: []string{"/etc/passwd"}}, unix.EACCES, ""},
		{"no such directory", SpawnRequest{Argv: []string{"true"}, Dir: "/no/such/dir"}, unix.ENOENT, "change to the working directory"},
	}
	ctx := testCtx(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 2*maxAsync + 1 {
				ch, r := noWait(t, in, tt.req)
				if st, ok := readStatus(t, r); ok {
					t.Fatalf("round %d: status %+v on the pipe of a failed start, want none", round, st)
				}
				_, err := ch.Wait(ctx)
				what := tt.what
				if in.SpawnPath() == SpawnFork {
					what = "" // ForkExec's errors do not name the step
				}
				if !errors.Is(err, ErrNotStarted) || !errors.Is(err, tt.errno) || !strings.Contains(err.Error(), what) {
					t.Fatalf("round %d: Wait = %v, want ErrNotStarted, %v and %q", round, err, tt.errno, what)
				}
				ok, okR := noWait(t, in, SpawnRequest{Argv: []string{"sh", "-c", "exit 3"}})
				if st, got := readStatus(t, okR); !got || st.Code != 3 {
					t.Fatalf("round %d: status %+v, %v; want code 3", round, st, got)
				}
				ok.Finish(ExitStatus{Code: 3})
			}
		})
	}
}

// TestNoWaitSpawnsDoNotQueue checks that the spawner does not wait for a NoWait
// spawn's child to exec: with the tree's group frozen, a child cloned into it stops
// before its first instruction, and the spawns after it, NoWait or waited, still
// start and end. A signal reaches such a child though it has not yet made its
// process group. After the thaw the first one ends as usual.
func TestNoWaitSpawnsDoNotQueue(t *testing.T) {
	t.Parallel()
	home, tree := treeGroups(t, nil)
	in := startInit(t, Config{Cgroup: home})
	if in.SpawnPath() != SpawnCloneInto || !cloneBuilt {
		t.Skipf("the init spawns on the %v path", in.SpawnPath())
	}
	thaw := freezeTree(t, tree)
	defer thaw()
	procs, dir := openTree(t, tree)
	_, frozen := noWait(t, in, SpawnRequest{Argv: []string{"true"}, Cgroup: procs, CgroupDir: dir})
	killed, killedR := noWait(t, in, SpawnRequest{Argv: []string{"sleep", "1000"}, Cgroup: procs, CgroupDir: dir})
	waitFor(t, "two processes in the frozen group", func() bool { return len(cgroupPIDs(t, tree)) == 2 })

	// Bounded: were the spawner waiting for the frozen child, these would never start.
	ctx, cancel := context.WithTimeout(testCtx(t), testTimeout)
	defer cancel()
	res := runReq(t, in, "", SpawnRequest{Argv: []string{"echo", "after"}})
	if res.status.Code != 0 || res.stdout != "after\n" {
		t.Fatalf("a waited spawn behind a frozen one: %+v %q %q", res.status, res.stdout, res.stderr)
	}
	_, r := noWait(t, in, SpawnRequest{Argv: []string{"true"}})
	if st, ok := readStatus(t, r); !ok || st.Code != 0 {
		t.Fatalf("a NoWait spawn behind a frozen one: %+v, %v", st, ok)
	}

	// The sleep has not run a single instruction, so it has no process group yet.
	if err := killed.Signal(ctx, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st, ok := readStatus(t, killedR); !ok || st.Signal != unix.SIGKILL {
		t.Fatalf("a frozen child signalled before it made its group: %+v, %v; want SIGKILL", st, ok)
	}
	thaw()
	if st, ok := readStatus(t, frozen); !ok || st.Code != 0 {
		t.Fatalf("the frozen spawn after the thaw: %+v, %v", st, ok)
	}
}

// TestExitsReportedDuringFork checks that the reaper reports exits while the spawner
// is in a fork: a waited spawn into a frozen group keeps the spawner in clone3 until
// the thaw (its child never reaches its exec), and an exit meanwhile is reported at
// once, not after the thaw.
func TestExitsReportedDuringFork(t *testing.T) {
	t.Parallel()
	home, tree := treeGroups(t, nil)
	in := startInit(t, Config{Cgroup: home})
	if in.SpawnPath() != SpawnCloneInto {
		t.Skipf("the init spawns on the %v path", in.SpawnPath())
	}
	ctx := testCtx(t)
	ir, iw := mustPipe(t)
	defer iw.Close()
	cat, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"cat"}, Stdin: ir})
	_ = ir.Close()
	if err != nil {
		t.Fatal(err)
	}
	thaw := freezeTree(t, tree)
	defer thaw()
	procs, dir := openTree(t, tree)
	started := make(chan error, 1)
	go func() {
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"true"}, Cgroup: procs, CgroupDir: dir})
		if err == nil {
			_, err = ch.Wait(ctx)
		}
		started <- err
	}()
	waitFor(t, "a process in the frozen group", func() bool { return len(cgroupPIDs(t, tree)) == 1 })

	_ = iw.Close() // cat exits
	if st, err := cat.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("cat's exit while the spawner forks: %+v, %v", st, err)
	}
	select {
	case err := <-started:
		t.Fatalf("the spawn into the frozen group ended before the thaw: %v", err)
	default:
	}
	thaw()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}
