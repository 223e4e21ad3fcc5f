package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/proctest"
)

// newLeaseSandbox makes a namespace sandbox (in a user namespace when the suite runs on
// namespace-userns) whose init holds lease. It skips where the kernel has no cgroup2
// freezer, and fails where there are no namespaces (newNSSandbox).
func newLeaseSandbox(tb testing.TB, lease *Lease, cfg *Config) *Sandbox {
	tb.Helper()
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	d, _ := testDriver.(NamespaceDriver)
	d.Lease = lease
	c.Driver = d
	s := newNSSandbox(tb, &c)
	if _, err := os.Stat(filepath.Join(s.cg.nest, "cgroup.freeze")); err != nil {
		tb.Skipf("this kernel has no cgroup2 freezer (cgroup.freeze): %v", err)
	}
	return s
}

// waitFrozen waits until the sandbox's freeze group says frozen is want: every process
// below it stopped, or released.
func waitFrozen(tb testing.TB, s *Sandbox, want bool) {
	tb.Helper()
	line := "frozen 0"
	if want {
		line = "frozen 1"
	}
	deadline := time.Now().Add(bound)
	for {
		b, err := os.ReadFile(filepath.Join(s.cg.nest, "cgroup.events"))
		if err == nil && strings.Contains(string(b), line) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not %q after %v: %q %v", s.cg.nest, line, bound, b, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fileSize is the size of a workspace file, 0 if it is missing.
func fileSize(s *Sandbox, name string) int64 {
	fi, err := os.Stat(filepath.Join(s.Dir(), name))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// waitGrowing waits until every named workspace file grows.
func waitGrowing(tb testing.TB, s *Sandbox, names ...string) {
	tb.Helper()
	for _, n := range names {
		before := fileSize(s, n)
		deadline := time.Now().Add(bound)
		for fileSize(s, n) <= before {
			if time.Now().After(deadline) {
				tb.Fatalf("%s did not grow in %v", n, bound)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// leaseWriter appends the time to f every 20 ms, and starts a setsid child that does
// the same to g and writes its pid to gpid.
const leaseWriter = `setsid sh -c 'echo $$ > gpid; while :; do date +%s%N >> g; sleep 0.02; done' </dev/null >/dev/null 2>&1 &
while :; do date +%s%N >> f; sleep 0.02; done`

// TestLeaseFreezesSandbox checks the whole cycle on the namespace driver: processes
// run while the lease holds; when it passes they stop (a setsid child too) and
// nothing can start (exec, process, session command: ErrLeaseExpired); Extend thaws
// them and starts work again. The init itself is never frozen.
func TestLeaseFreezesSandbox(t *testing.T) {
	t.Parallel()
	const term = 2 * time.Second
	lease := NewLease()
	until := time.Now().Add(term)
	lease.Extend(until)
	s := newLeaseSandbox(t, lease, nil)
	ctx := testCtx(t)
	sess, err := s.NewSession(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(ctx, StartOptions{Command: leaseWriter})
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; ; try++ { // see both write while the lease holds (a loaded machine may need another term)
		waitGrowing(t, s, "f", "g")
		if time.Now().Before(until) {
			break
		}
		if try == 5 {
			t.Fatalf("the lease ran out %d times before the writers were seen running", try)
		}
		until = time.Now().Add(term)
		lease.Extend(until)
	}
	home := s.h.(*nsHost).in.PID()
	if cg := proctest.StatusField("/proc", home, "Name"); cg == "" {
		t.Fatalf("the init %d is gone", home)
	}
	waitFrozen(t, s, true)
	t.Logf("frozen seen %v after the deadline", time.Since(until))
	if lease.Valid() {
		t.Fatal("frozen while the lease is valid")
	}
	sizes := func() [2]int64 { return [2]int64{fileSize(s, "f"), fileSize(s, "g")} }
	frozen := sizes()
	time.Sleep(300 * time.Millisecond) // an observation window, not a synchronisation: nothing may change in it
	if got := sizes(); got != frozen {
		t.Fatalf("files grew while frozen: %v → %v", frozen, got)
	}
	if st := proctest.StatusField("/proc", home, "State"); strings.HasPrefix(st, "T") || st == "" {
		t.Fatalf("the init is %q, want it running to hear a renewal", st)
	}
	if _, err := s.Exec(ctx, ExecOptions{Command: "true"}); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("Exec while fenced: %v, want ErrLeaseExpired", err)
	}
	if _, err := s.Start(ctx, StartOptions{Command: "true"}); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("Start while fenced: %v, want ErrLeaseExpired", err)
	}
	if _, err := s.StartTerminal(ctx, TerminalOptions{ID: "t1"}); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("StartTerminal while fenced: %v, want ErrLeaseExpired", err)
	}
	if _, err := sess.Exec(ctx, SessionCommand{Command: "true"}); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("session Exec while fenced: %v, want ErrLeaseExpired", err)
	}
	if _, err := s.NewSession(ctx, SessionOptions{}); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("NewSession while fenced: %v, want ErrLeaseExpired", err)
	}
	if p.Info().Status != StatusRunning {
		t.Fatalf("the frozen process is %v", p.Info().Status)
	}

	lease.Extend(time.Now().Add(time.Hour))
	waitFrozen(t, s, false)
	waitGrowing(t, s, "f", "g")
	r, err := s.Exec(ctx, ExecOptions{Command: "echo back"})
	if err != nil || string(r.Stdout) != "back\n" {
		t.Fatalf("Exec after the renewal: %q %v", r.Stdout, err)
	}
	if r, err := sess.Exec(ctx, SessionCommand{Command: "echo session"}); err != nil || string(r.Stdout) != "session\n" {
		t.Fatalf("session Exec after the renewal: %q %v", r.Stdout, err)
	}
}

// TestLeaseExpiredSandboxStartsFenced checks that a sandbox made under a lease that was
// never extended (or has run out) starts nothing until Extend.
func TestLeaseExpiredSandboxStartsFenced(t *testing.T) {
	t.Parallel()
	lease := NewLease()
	s := newLeaseSandbox(t, lease, nil)
	ctx := testCtx(t)
	if _, err := s.Exec(ctx, ExecOptions{Command: "echo ran > out"}); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("Exec under an expired lease: %v, want ErrLeaseExpired", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran: %v", err)
	}
	lease.Extend(time.Now().Add(time.Hour))
	r, err := s.Exec(ctx, ExecOptions{Command: "echo ran"})
	if err != nil || string(r.Stdout) != "ran\n" {
		t.Fatalf("Exec after Extend: %q %v", r.Stdout, err)
	}
}

// holdLease keeps lease valid for term past now, renewing it in the background until
// the returned release is called: a setup that must run under the lease does not race
// a fixed deadline on a loaded machine. release stops the renewals, extends the lease
// one last term and returns that deadline; later calls return it again.
func holdLease(lease *Lease, term time.Duration) (release func() time.Time) {
	lease.Extend(time.Now().Add(term))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(term / 10)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				lease.Extend(time.Now().Add(term))
			}
		}
	}()
	var once sync.Once
	var until time.Time
	return func() time.Time {
		once.Do(func() {
			close(stop)
			<-done
			until = time.Now().Add(term)
			lease.Extend(until)
		})
		return until
	}
}

// TestLeaseFrozenSandboxEnds checks that a frozen sandbox still ends cleanly: an exec
// times out, Kill ends a process that ignores SIGTERM, and Close ends everything, a
// setsid child included, with no process or cgroup left.
func TestLeaseFrozenSandboxEnds(t *testing.T) {
	t.Parallel()
	lease := NewLease()
	release := holdLease(lease, 3*time.Second)
	defer release()
	s := newLeaseSandbox(t, lease, &Config{KillGrace: 200 * time.Millisecond})
	ctx := testCtx(t)
	stubborn, err := s.Start(ctx, StartOptions{Command: `trap '' TERM; ` + escapeeScript + `echo ready; exec sleep 1000`})
	if err != nil {
		t.Fatal(err)
	}
	sub := stubborn.Subscribe(0)
	waitOutput(t, ctx, sub, "ready") // Start returns before the escapee wrote its pid
	sub.Close()
	other, err := s.Start(ctx, StartOptions{Command: `trap '' TERM; while :; do sleep 1; done`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewSession(ctx, SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	escapee := escapeePID(t, s, s.Dir())
	until := release() // the last term starts now, with everything running
	execDone := make(chan ExecResult, 1)
	go func() {
		r, err := s.Exec(ctx, ExecOptions{Command: "sleep 1000", Timeout: time.Until(until) + time.Second})
		if err != nil {
			t.Errorf("Exec: %v", err)
		}
		execDone <- r
	}()
	waitFrozen(t, s, true)
	if st := proctest.StatusField("/proc", escapee, "State"); st == "" {
		t.Fatalf("the escapee %d died with the freeze", escapee)
	}
	select {
	case r := <-execDone:
		if !r.TimedOut {
			t.Fatalf("exec in a frozen sandbox ended %+v, want its timeout", r)
		}
	case <-time.After(bound):
		t.Fatal("exec in a frozen sandbox outlived its timeout")
	}
	if err := stubborn.Kill(ctx); err != nil {
		t.Fatalf("Kill of a frozen process: %v", err)
	}
	if ex := stubborn.Info().Exit; ex == nil || ex.Signal != "SIGKILL" {
		t.Fatalf("the frozen process ended %+v, want SIGKILL", ex)
	}
	t0 := time.Now()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close of a frozen sandbox: %v", err)
	}
	t.Logf("Close of a frozen sandbox took %v", time.Since(t0))
	waitGone(t, escapee)
	if ex := other.Info().Exit; ex == nil {
		t.Fatal("a frozen process outlived Close")
	}
	checkCgroupsGone(t, s)
}

// TestLeaseLayout checks where the groups go with a lease: every tree below the freeze
// group, the init beside it.
func TestLeaseLayout(t *testing.T) {
	t.Parallel()
	lease := NewLease()
	lease.Extend(time.Now().Add(time.Hour))
	s := newLeaseSandbox(t, lease, nil)
	p, err := s.Start(testCtx(t), StartOptions{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	groupOf := func(pid int) string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "0::"); ok {
				return v
			}
		}
		t.Fatalf("no cgroup2 line for %d: %q", pid, b)
		return ""
	}
	nest := "/" + filepath.Base(s.cg.v2) + "/" + freezeGroupName + "/"
	if g := groupOf(hostPID(t, s, p.Info().PID)); !strings.Contains(g, nest) {
		t.Errorf("the process is in %s, not below %s", g, nest)
	}
	if g := groupOf(s.h.(*nsHost).in.PID()); strings.Contains(g, nest) {
		t.Errorf("the init is in %s, below the freeze group", g)
	}
}

// TestLeaseStoppedInitBlocksNoOne checks that an init that does not read (stopped, its
// socket full of renewals) neither blocks Extend nor keeps the other sandboxes from
// being frozen and thawed, and that it is renewed once it runs again.
func TestLeaseStoppedInitBlocksNoOne(t *testing.T) {
	t.Parallel()
	lease := NewLease()
	until := time.Now().Add(2 * time.Second)
	lease.Extend(until)
	stopped, live := newLeaseSandbox(t, lease, nil), newLeaseSandbox(t, lease, nil)
	initPID := stopped.h.(*nsHost).in.PID()
	if err := syscall.Kill(initPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(initPID, syscall.SIGCONT) }
	defer cont()
	var slowest time.Duration
	for i := range 20000 { // far more frames than a socket holds
		t0 := time.Now()
		lease.Extend(until.Add(time.Duration(i)))
		slowest = max(slowest, time.Since(t0))
		if i%16 == 0 {
			time.Sleep(time.Microsecond) // let the senders run
		}
	}
	t.Logf("20000 extensions with one init stopped: the slowest took %v", slowest)
	waitFrozen(t, live, true)
	lease.Extend(time.Now().Add(time.Hour))
	waitFrozen(t, live, false)
	if r, err := live.Exec(testCtx(t), ExecOptions{Command: "echo live"}); err != nil || string(r.Stdout) != "live\n" {
		t.Fatalf("Exec in the live sandbox: %q %v", r.Stdout, err)
	}
	cont()
	waitFrozen(t, stopped, false)
	if r, err := stopped.Exec(testCtx(t), ExecOptions{Command: "echo back"}); err != nil || string(r.Stdout) != "back\n" {
		t.Fatalf("Exec in the sandbox whose init was stopped: %q %v", r.Stdout, err)
	}
}

// TestLeaseHammer extends a lease from several goroutines while sandboxes holding it
// are made, used and closed: under -race, and every exec must run (the lease is valid
// throughout).
func TestLeaseHammer(t *testing.T) {
	t.Parallel()
	lease := NewLease()
	lease.Extend(time.Now().Add(time.Hour))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lease.Extend(time.Now().Add(time.Hour))
				_ = lease.Valid()
				time.Sleep(100 * time.Microsecond)
			}
		})
	}
	var users sync.WaitGroup
	for range 3 {
		users.Go(func() {
			for range 3 {
				s := newLeaseSandbox(t, lease, nil)
				r, err := s.Exec(testCtx(t), ExecOptions{Command: "echo ok"})
				if err != nil || string(r.Stdout) != "ok\n" {
					t.Errorf("Exec: %q %v", r.Stdout, err)
				}
				if err := s.Close(testCtx(t)); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		})
	}
	users.Wait()
	close(stop)
	wg.Wait()
	lease.mu.Lock()
	defer lease.mu.Unlock()
	if len(lease.inits) != 0 {
		t.Fatalf("%d closed sandboxes still hold the lease", len(lease.inits))
	}
}
