package nsinit

import (
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

// TestIdleInitGivesBackMemory: after a burst of spawns, an init that goes quiet hands
// back to the kernel what the burst grew: the heap's free pages (without the trim it
// kept 3-4 MiB more) and the async spawns' slots' pages (8-12 KiB a slot that ran a
// child). It must come back to within quietSlack of where it was before the burst,
// and hold no slot page.
//
// On the own spawn path a spawn allocates nothing on Go's heap
// (TestSpawnsAllocateNothing), so a burst grows only the slots' pages. The
// fallback's spawns (ForkExec, which lays out each child's strings anew) still leave
// garbage, and there a burst grows Go's heap by 3-4 MiB, which the heap's trim gives
// back.
//
// Where it was is measured after a first burst and the quiet after it: on the
// fallback path the Go runtime's first garbage collections make metadata for every
// size class the init allocates in (the sets of spans and the mark bits, about 1 MiB
// here), which it keeps for the life of the process, and no trim can give back (see
// BENCHMARKS.md, "#14, eighth pass: the init's memory after bursts").
//
// Under -race the init's memory is mostly the detector's, so `make test` runs this
// test once more without it.
func TestIdleInitGivesBackMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is most of the init's: run without -race")
	}
	t.Parallel()
	// Over 12 runs a second burst's quiet level was 360 KiB below to 490 KiB above the
	// first's (where the heap's live objects lie decides how many spans stay); without
	// the heap's trim it stays 3-4 MiB above.
	const quietSlack = 768
	for _, tt := range []struct {
		name      string
		forceFork bool
		minGrowth int // KiB a burst must grow the init by, for the test to mean anything
	}{
		{"own path", false, 0},
		{"fallback", true, 1024},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := startInit(t, Config{ForceFork: tt.forceFork})
			b := newBurst(t, in)
			slots := in.SpawnPath() != SpawnFork && cloneBuilt
			b.run(4, 500)
			before := quietKiB(t, in, slots, time.Now())
			b.run(4, 500)
			ended := time.Now()
			grown := privateKiB(t, in.PID())
			if grown-before < tt.minGrowth {
				// A burst grows Go's heap by 3-4 MiB: unless the first burst's growth was kept.
				t.Fatalf("the burst grew the init's private memory by only %d KiB, from %d KiB once quiet after the first", grown-before, before)
			}
			now := quietKiB(t, in, slots, ended)
			t.Logf("private memory %d KiB before the burst, %d KiB after it, %d KiB once quiet", before, grown, now)
			if now-before > quietSlack {
				t.Fatalf("private memory %d KiB before the burst, %d KiB after it, still %d KiB once quiet (more than %d KiB above)",
					before, grown, now, quietSlack)
			}
		})
	}
}

// TestFewSpawnsNotCollected checks that the heap's trim does not make the Go runtime
// collect for the first time after a few spawns: the first collection makes metadata
// the runtime keeps for the life of the process (here 340-360 KiB more in the init's
// runtime mappings; 430-460 KiB in a sandgate init, whose heap gave back only 40-120
// KiB for it), worth more than a few spawns' garbage (firstCollectionPays).
func TestFewSpawnsNotCollected(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is most of the init's: run without -race")
	}
	t.Parallel()
	in := startInit(t, Config{})
	b := newBurst(t, in)
	b.run(1, 20)
	ended := time.Now()
	spawned, meta0 := privateKiB(t, in.PID()), memByKind(smaps(t, in.PID()))["anon"][1]
	now := quietKiB(t, in, in.SpawnPath() != SpawnFork && cloneBuilt, ended)
	meta := memByKind(smaps(t, in.PID()))["anon"][1]
	t.Logf("private memory %d KiB after 20 spawns, %d KiB once quiet; the runtime's own mappings %d, %d KiB", spawned, now, meta0, meta)
	if meta > meta0+64 {
		t.Fatalf("the quiet spell after 20 spawns grew the runtime's own mappings from %d to %d KiB: a first collection", meta0, meta)
	}
}

// quietKiB waits until the init has given back what it gives back once quiet, after
// a burst that ended at ended, and returns its private memory then. Each trim runs
// between trimAfter and twice that after the last spawn; the two (the heap's and the
// slots') keep timers of their own, so one may run up to trimAfter after the other.
// So it waits until twice trimAfter and a second have passed since the burst, no
// async spawn slot holds a page (if the init spawns on slots), and the private memory
// has not fallen for trimAfter. It fails the test if that takes longer than
// testTimeout.
func quietKiB(t *testing.T, in *Init, slots bool, ended time.Time) int {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	last, since := privateKiB(t, in.PID()), ended
	for {
		time.Sleep(100 * time.Millisecond)
		now := privateKiB(t, in.PID())
		if now < last { // still falling
			since = time.Now()
		}
		last = now
		held, found := slotPages(t, in.PID())
		if slots && found == 0 {
			t.Fatal("no async spawn slot among the init's mappings")
		}
		if held == 0 && time.Since(ended) >= 2*trimAfter+time.Second && time.Since(since) >= trimAfter {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("the init did not go quiet: %d KiB in %d slots' pages, private memory %d KiB", held, found, now)
		}
	}
}

// slotPages returns the resident KiB of the init's async spawn slots and how many
// there are.
func slotPages(t *testing.T, pid int) (kib, slots int) {
	t.Helper()
	ms := smaps(t, pid)
	for i := range ms {
		if kind(ms, i) == "slot" {
			kib += ms[i].rss
			slots++
		}
	}
	return kib, slots
}
