package nsinit

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleTrim checks the trim's timer: its function runs once spawns stop, never
// twice at once, and again after a later spawn; spawns counted while it runs set the
// timer again. Spawns come from several goroutines, as from the spawner and the
// slots' own counting.
func TestIdleTrim(t *testing.T) {
	t.Parallel()
	var runs, running, overlapped atomic.Int32
	ran := make(chan struct{}, 16)
	var tr *idleTrim
	tr = afterQuiet(func() {
		if running.Add(1) > 1 {
			overlapped.Store(1)
		}
		if runs.Add(1) == 1 {
			tr.spawned() // a spawn while the function runs
		}
		running.Add(-1)
		ran <- struct{}{}
	})
	waitRun := func(what string) {
		t.Helper()
		select {
		case <-ran:
		case <-time.After(testTimeout):
			t.Fatalf("the trim did not run %s", what)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				tr.spawned()
			}
		})
	}
	wg.Wait()
	waitRun("after the spawns stopped")
	waitRun("after a spawn counted while it ran")
	tr.spawned()
	waitRun("after a later spawn")
	if overlapped.Load() != 0 {
		t.Fatal("the trim's function ran twice at once")
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("the trim ran %d times, want 3", n)
	}
}

// TestIdleInitGivesBackMemory: after a burst of spawns, an init that goes quiet
// hands the heap the burst grew back to the kernel (without the trim it kept about
// 5 MiB more, measured 30 s later).
//
// Under -race the init's memory is mostly the detector's, so `make test` runs this
// test once more without it.
func TestIdleInitGivesBackMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is most of the init's: run without -race")
	}
	t.Parallel()
	in := startInit(t, Config{})
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	ctx := testCtx(t)
	// Arguments and an environment the size of a real one, so each spawn leaves
	// a few KiB of garbage in the init, as the runtime's execs do.
	env := os.Environ()
	for len(env) < 40 {
		env = append(env, "PAD_"+string(rune('A'+len(env)%26))+"="+string(make([]byte, 64)))
	}
	spawn := func() {
		r, w, err := os.Pipe()
		if err != nil {
			t.Error(err)
			return
		}
		defer r.Close()
		_, err = in.Spawn(ctx, SpawnRequest{Argv: []string{"true", "a-long-enough-argument"}, Env: env,
			Stdin: null, Stdout: null, Stderr: null, Status: w, NoWait: true})
		_ = w.Close()
		if err != nil {
			t.Error(err)
			return
		}
		if st, ok, err := ReadStatus(int(r.Fd())); err != nil || !ok || st.Code != 0 {
			t.Error(st, ok, err)
		}
	}
	spawn()
	before := privateKiB(t, in.PID())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				spawn()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	grown := privateKiB(t, in.PID())
	if grown-before < 1024 {
		t.Skipf("the burst grew the init's private memory by only %d KiB: nothing to give back", grown-before)
	}
	// At least half of what the burst added goes back once the init is quiet. (What
	// stays: heap spans still in use, the async spawns' stacks, runtime metadata.)
	deadline := time.Now().Add(30 * time.Second)
	for {
		now := privateKiB(t, in.PID())
		if now-before <= (grown-before)/2 {
			t.Logf("private memory %d KiB before the burst, %d KiB after it, %d KiB once quiet", before, grown, now)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("private memory %d KiB before the burst, %d KiB after it, still %d KiB 30 s later", before, grown, now)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
