package nsinit

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// leaseSandbox is an init holding a lease, with the layout the runtime gives it: the
// init in base/home, every spawn in a group of its own under base/trees, the freeze
// group.
type leaseSandbox struct {
	in    *Init
	trees string
	ws    string
}

func startLeaseInit(tb testing.TB, until int64) *leaseSandbox {
	tb.Helper()
	base := testCgroup(tb)
	home, trees := filepath.Join(base, "home"), filepath.Join(base, "trees")
	for _, d := range []string{home, trees} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(trees, "cgroup.freeze")); err != nil {
		tb.Skipf("this kernel has no cgroup2 freezer (cgroup.freeze): %v", err)
	}
	ws := tb.TempDir()
	in := startInit(tb, Config{Workspace: ws, Cgroup: home, Lease: true, LeaseUntil: until, Freeze: trees})
	return &leaseSandbox{in: in, trees: trees, ws: ws}
}

// spawnTree spawns argv (stdio /dev/null) in a new group below the freeze group.
func (ls *leaseSandbox) spawnTree(tb testing.TB, name string, argv ...string) (*Child, error) {
	tb.Helper()
	dir := filepath.Join(ls.trees, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { // before testCgroup's cleanup, which removes only base's children
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		waitRmdir(tb, dir)
	})
	procs, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer procs.Close()
	return ls.in.Spawn(testCtx(tb), SpawnRequest{Argv: argv, Cgroup: procs})
}

// waitFrozen waits until the group dir's cgroup.events says "frozen" is want: every
// process below it stopped (or, for false, released).
func waitFrozen(tb testing.TB, dir string, want bool) {
	tb.Helper()
	line := "frozen 0"
	if want {
		line = "frozen 1"
	}
	waitFor(tb, dir+" "+line, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		return err == nil && strings.Contains(string(b), line)
	})
}

// growing waits until the workspace file name grows, and returns its size.
func growing(tb testing.TB, ws, name string) int64 {
	tb.Helper()
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	before := size()
	waitFor(tb, name+" to grow", func() bool { return size() > before })
	return size()
}

// writer appends the time to f every 20 ms and starts a setsid child doing the same to
// g: the freeze must stop both.
const writer = `setsid sh -c 'while :; do date +%s%N >> g; sleep 0.02; done' </dev/null >/dev/null 2>&1 &
while :; do date +%s%N >> f; sleep 0.02; done`

// TestLeaseFreezesAndThaws checks that processes stop when the lease passes (a setsid
// child too), stay stopped while it is out, and run on after a renewal.
func TestLeaseFreezesAndThaws(t *testing.T) {
	t.Parallel()
	const term = int64(2 * time.Second)
	deadline := Now() + term
	ls := startLeaseInit(t, deadline)
	ch, err := ls.spawnTree(t, "t1", "sh", "-c", writer)
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; ; try++ { // see both write while the lease holds (a loaded machine may need another term)
		growing(t, ls.ws, "f")
		growing(t, ls.ws, "g")
		if Now() < deadline {
			break
		}
		if try == 5 {
			t.Fatalf("the lease ran out %d times before the writers were seen running", try)
		}
		deadline = Now() + term
		ls.in.Renew(deadline)
	}
	waitFrozen(t, ls.trees, true)
	lag := time.Duration(Now() - deadline)
	t.Logf("frozen seen %v after the deadline", lag)
	if lag < 0 {
		t.Fatalf("frozen %v before the deadline", -lag)
	}
	sizes := func() [2]int64 {
		var out [2]int64
		for i, n := range []string{"f", "g"} {
			if fi, err := os.Stat(filepath.Join(ls.ws, n)); err == nil {
				out[i] = fi.Size()
			}
		}
		return out
	}
	frozen := sizes()
	time.Sleep(300 * time.Millisecond) // an observation window, not a synchronisation: nothing may change in it
	if got := sizes(); got != frozen {
		t.Fatalf("files grew while frozen: %v → %v", frozen, got)
	}
	select {
	case <-ch.Done():
		t.Fatal("the frozen process exited")
	default:
	}
	ls.in.Renew(Now() + int64(time.Hour))
	waitFrozen(t, ls.trees, false)
	growing(t, ls.ws, "f")
	growing(t, ls.ws, "g")
}

// TestLeaseExpiredStartsFenced checks that a sandbox whose lease has already run out
// runs nothing (spawns fail with ErrLeaseExpired, the freeze group is frozen) until a
// renewal, and that a spawn carries the client's deadline, so a renewal whose frame is
// still queued does not fail it.
func TestLeaseExpiredStartsFenced(t *testing.T) {
	t.Parallel()
	ls := startLeaseInit(t, 0)
	waitFrozen(t, ls.trees, true)
	if _, err := ls.spawnTree(t, "t1", "true"); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("spawn with the lease out: %v, want ErrLeaseExpired", err)
	}
	// As if Renew's frame were still in the socket: only the spawn carries it.
	ls.in.lease.until.Store(Now() + int64(time.Hour))
	ch, err := ls.spawnTree(t, "t2", "sh", "-c", "echo ran > out")
	if err != nil {
		t.Fatalf("spawn after the renewal: %v", err)
	}
	if st, err := ch.Wait(testCtx(t)); err != nil || st.Code != 0 {
		t.Fatalf("exit %v %v", st, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ls.ws, "out")); string(b) != "ran\n" {
		t.Fatalf("out = %q", b)
	}
	waitFrozen(t, ls.trees, false)
}

// TestLeaseKillsWithoutFreezer checks the fallback: with no freeze group the init kills
// every process of the sandbox (a setsid daemon too) when the lease runs out, refuses
// spawns, and runs them again after a renewal.
func TestLeaseKillsWithoutFreezer(t *testing.T) {
	t.Parallel()
	deadline := Now() + int64(3*time.Second)
	in := startInit(t, Config{Lease: true, LeaseUntil: deadline})
	ns := nsOf(t, in.PID())
	ch, err := in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & exec sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ch.Wait(testCtx(t))
	if err != nil || st.Signal != syscall.SIGKILL {
		t.Fatalf("exit %v %v, want killed", st, err)
	}
	if lag := time.Duration(Now() - deadline); lag < 0 {
		t.Fatalf("killed %v before the deadline", -lag)
	} else {
		t.Logf("killed %v after the deadline", lag)
	}
	waitFor(t, "only the init to be left", func() bool { return len(livePIDsIn(ns)) == 1 })
	if _, err := in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"true"}}); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("spawn with the lease out: %v, want ErrLeaseExpired", err)
	}
	in.Renew(Now() + int64(time.Hour))
	if res := run(t, in, "", "true"); res.status.Code != 0 {
		t.Fatalf("after the renewal: %v %q", res.status, res.stderr)
	}
}

// TestLeaseSpawnNeedsCgroup checks that with a freeze group a spawn outside any group
// (it would run in the init's own, which is never frozen) is refused.
func TestLeaseSpawnNeedsCgroup(t *testing.T) {
	t.Parallel()
	ls := startLeaseInit(t, Now()+int64(time.Hour))
	_, err := ls.in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "needs a cgroup") {
		t.Fatalf("spawn without a cgroup: %v", err)
	}
}

// TestRenewNeverBlocks checks that Renew returns while the init does not read (it is
// stopped) and its socket fills, and that the latest deadline reaches it once it runs.
func TestRenewNeverBlocks(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{Lease: true, LeaseUntil: Now() + int64(time.Hour)})
	if err := unix.Kill(in.PID(), unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = unix.Kill(in.PID(), unix.SIGCONT) }
	defer cont()
	var slowest time.Duration
	first := Now() + int64(time.Hour)
	last := first
	for i := range 20000 {
		last = first + int64(i)
		t0 := time.Now()
		in.Renew(last)
		slowest = max(slowest, time.Since(t0))
		if i%16 == 0 {
			time.Sleep(time.Microsecond) // let the sender run and fill the socket
		}
	}
	t.Logf("20000 renewals of a stopped init: the slowest took %v; %d were sent before the sender blocked", slowest, in.lease.sent.Load()-first)
	cont()
	waitFor(t, "the last deadline to be sent", func() bool { return in.lease.sent.Load() == last })
	if res := run(t, in, "", "true"); res.status.Code != 0 {
		t.Fatalf("after the renewals: %v %q", res.status, res.stderr)
	}
}

// BenchmarkRenew measures the server's cost of pushing a renewal to 20 inits: Renew on
// each and the frames sent (the sender goroutines' work included).
func BenchmarkRenew(b *testing.B) {
	const n = 20
	inits := make([]*Init, n)
	for i := range inits {
		inits[i] = startInit(b, Config{Lease: true, LeaseUntil: Now() + int64(time.Hour)})
	}
	until := Now() + int64(time.Hour)
	b.ResetTimer()
	for range b.N {
		until++
		for _, in := range inits {
			in.Renew(until)
		}
		for _, in := range inits {
			for in.lease.sent.Load() != until {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/init")
}

// TestRenewConcurrent renews one init from several goroutines at once (-race): the
// latest deadline wins and is the one sent last.
func TestRenewConcurrent(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{Lease: true, LeaseUntil: Now() + int64(time.Hour)})
	base := Now() + int64(time.Hour)
	const workers, each = 4, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				in.Renew(base + int64(i*workers+w))
			}
		})
	}
	wg.Wait()
	last := base + int64((each-1)*workers+workers-1)
	if got := in.lease.until.Load(); got != last {
		t.Fatalf("deadline %d, want the latest %d", got-base, last-base)
	}
	waitFor(t, "the latest deadline to be sent", func() bool { return in.lease.sent.Load() == last })
	in.Renew(base) // an older deadline changes nothing
	if got := in.lease.until.Load(); got != last {
		t.Fatalf("an older renewal moved the deadline back to %d", got-base)
	}
}

// TestLeaseForever checks that the largest deadline arms the timer (it saturates) and
// runs spawns.
func TestLeaseForever(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{Lease: true, LeaseUntil: math.MaxInt64})
	if res := run(t, in, "", "true"); res.status.Code != 0 {
		t.Fatalf("%v %q", res.status, res.stderr)
	}
}
