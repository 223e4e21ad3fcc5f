package runtime

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireContainment fails the test when this machine has no writable cgroup2 group
// with cgroup.kill: CI runs on machines that have one.
func requireContainment(tb testing.TB) {
	tb.Helper()
	if _, err := Containment(); err != nil {
		tb.Fatalf("this test needs a writable cgroup2 hierarchy with cgroup.kill: %v", err)
	}
}

// requireV1 fails the test when the v1 hierarchy of controller ctl is missing.
func requireV1(tb testing.TB, ctl string) {
	tb.Helper()
	if hostCgroups().v1[ctl] == "" {
		tb.Fatalf("this test needs the cgroup v1 %s controller mounted", ctl)
	}
}

// checkCgroupsGone fails tb when a group of the closed sandbox s is left.
func checkCgroupsGone(tb testing.TB, s *Sandbox) {
	tb.Helper()
	if s.cg == nil {
		return
	}
	for _, d := range append([]string{s.cg.v2}, s.cg.v1dirs()...) {
		if d != "" && fileExists(d) {
			tb.Errorf("cgroup %s left after Close", d)
		}
	}
}

// escapeeScript starts a grandchild that moves to a session of its own (setsid) and
// writes its pid to the file pid, and waits until it did.
const escapeeScript = `setsid sh -c 'echo $$ > pid; exec sleep 300' >/dev/null 2>&1 &
while [ ! -s pid ]; do sleep 0.01; done; `

// escapeePID reads the pid the escapee wrote in dir, the workspace of sandbox s (nil:
// a sandbox of another process, on the local driver), as a host pid, and makes sure it
// dies with the test even when containment failed to end it.
func escapeePID(tb testing.TB, s *Sandbox, dir string) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		tb.Fatalf("the escapee did not start: %v", err)
	}
	pid := hostPID(tb, s, firstInt(tb, b))
	tb.Cleanup(func() {
		if !pidGone(pid) {
			_ = killPid(pid)
			waitGone(tb, pid)
		}
	})
	if sid, err := sessionOf(pid); err == nil && sid != pid {
		tb.Fatalf("escapee %d is in session %d, not its own: the test tests nothing", pid, sid)
	}
	return pid
}

// sessionOf returns the session id of a live pid from /proc.
func sessionOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return strconv.Atoi(f[3])
}

// TestCgroupSetsidExec: a setsid'd grandchild of an exec is dead once Exec returns,
// whether the main process exited or the timeout killed it.
func TestCgroupSetsidExec(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	for _, tt := range []struct {
		name     string
		tail     string
		timeout  time.Duration
		timedOut bool
	}{
		{name: "main exits", tail: "exit 3"},
		{name: "timeout", tail: "exec sleep 300", timeout: 3 * time.Second, timedOut: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, nil)
			res, err := s.Exec(testCtx(t), ExecOptions{Command: escapeeScript + tt.tail, Timeout: tt.timeout})
			if err != nil {
				t.Fatal(err)
			}
			pid := escapeePID(t, s, s.Dir())
			if res.TimedOut != tt.timedOut {
				t.Errorf("timed out %v, want %v", res.TimedOut, tt.timedOut)
			}
			if !pidGone(pid) {
				t.Errorf("setsid grandchild %d still runs after Exec returned", pid)
			}
		})
	}
}

// TestCgroupSetsidProcess: a setsid'd grandchild of a background process dies with its
// tree: when the process is removed, when its main process exits, and when a session
// shell that started it (double fork included) is closed.
func TestCgroupSetsidProcess(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	for _, tt := range []struct {
		name string
		end  func(t *testing.T, s *Sandbox, p *Process)
		tail string
	}{
		{name: "remove", tail: "echo ready; exec sleep 300", end: func(t *testing.T, s *Sandbox, p *Process) {
			if err := s.Remove(testCtx(t), p.ID()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "main exits", tail: "echo ready; read x; exit 0", end: func(t *testing.T, s *Sandbox, p *Process) {
			if _, err := p.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "pty kill", tail: "echo ready; exec sleep 300", end: func(t *testing.T, s *Sandbox, p *Process) {
			if err := p.Kill(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{KillGrace: 200 * time.Millisecond})
			o := StartOptions{Command: escapeeScript + tt.tail}
			if tt.name == "pty kill" {
				o.PTY = &WinSize{Cols: 80, Rows: 24}
			}
			p, err := s.Start(testCtx(t), o)
			if err != nil {
				t.Fatal(err)
			}
			sub := p.Subscribe(0)
			defer sub.Close()
			waitOutput(t, testCtx(t), sub, "ready")
			pid := escapeePID(t, s, s.Dir())
			tt.end(t, s, p)
			if !pidGone(pid) {
				t.Errorf("setsid grandchild %d still runs after its tree ended", pid)
			}
		})
	}
}

// TestCgroupSessionClose: a double-forked, setsid'd grandchild of a session shell dies
// when the session closes.
func TestCgroupSessionClose(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s := newTestSandbox(t, nil)
	sess, err := s.NewSession(testCtx(t), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.Exec(testCtx(t), SessionCommand{Command: "(" + escapeeScript + "true) </dev/null >/dev/null 2>&1"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	pid := escapeePID(t, s, s.Dir())
	if err := sess.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !pidGone(pid) {
		t.Errorf("setsid grandchild %d of the session still runs after Close", pid)
	}
}

// TestCgroupCloseDoubleFork: a process that double-forks and setsids survives nothing
// after Sandbox.Close, and Close removes every group of the sandbox.
func TestCgroupCloseDoubleFork(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	s, err := New(&Config{Dir: t.TempDir(), KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(testCtx(t), StartOptions{Command: "(" + escapeeScript + "true) </dev/null >/dev/null 2>&1; echo ready; exec sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	waitOutput(t, testCtx(t), sub, "ready")
	sub.Close()
	pid := escapeePID(t, s, s.Dir())
	dirs := append([]string{s.cg.v2}, s.cg.v1dirs()...)
	for _, d := range dirs {
		if !isDir(d) {
			t.Fatalf("group %s missing while the sandbox runs", d)
		}
	}
	if err := s.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !pidGone(pid) {
		t.Errorf("double-forked setsid process %d still runs after Close", pid)
	}
	for _, d := range dirs {
		if fileExists(d) {
			t.Errorf("group %s left after Close", d)
		}
	}
}

// TestCgroupMemoryLimit: a memory hog in a sandbox with a 64 MiB limit is OOM-killed
// inside it; the test process goes on.
func TestCgroupMemoryLimit(t *testing.T) {
	requireV1(t, "memory")
	t.Parallel()
	s := newTestSandbox(t, &Config{MemoryBytes: 64 << 20})
	if n, err := readCgroupInt(s.cg.v1["memory"], "memory.limit_in_bytes"); err != nil || n != 64<<20 {
		t.Fatalf("memory.limit_in_bytes = %d, %v; the hog must not run unlimited", n, err)
	}
	res, err := s.Exec(testCtx(t), ExecOptions{Command: "until grep -q 'memory:/.*sandgate' /proc/$$/cgroup; do :; done; head -c 200M /dev/zero | tail"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 128+9 {
		t.Errorf("hog exit code %d, want 137 (SIGKILL by the OOM killer); stderr %q", res.ExitCode, res.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(s.cg.v1["memory"], "memory.oom_control"))
	if err != nil || !strings.Contains(string(b), "oom_kill 1") {
		t.Errorf("memory.oom_control = %q, %v; want oom_kill 1", b, err)
	}
}

// TestCgroupPidsLimit: a counting fork loop stops at the sandbox's pids limit.
func TestCgroupPidsLimit(t *testing.T) {
	requireV1(t, "pids")
	t.Parallel()
	s := newTestSandbox(t, &Config{Pids: 20})
	if n, err := readCgroupInt(s.cg.v1["pids"], "pids.max"); err != nil || n != 20 {
		t.Fatalf("pids.max = %d, %v; the loop must not run unlimited", n, err)
	}
	// Each sleep is one task; the shell is one more. The loop counts what it started
	// and stops at the first failed fork, or at 100.
	// The shell first waits to be in the sandbox's pids group: its pid is written
	// there just after it started (see startIn).
	res, err := s.Exec(testCtx(t), ExecOptions{Command: `until grep -q 'pids:/.*sandgate' /proc/$$/cgroup; do :; done
		n=0; while [ $n -lt 100 ]; do
		sleep 300 & [ $? -eq 0 ] || break; n=$((n+1)); echo $n; done`})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(res.Stdout))
	if len(lines) == 0 || len(lines) >= 20 {
		t.Fatalf("started %d sleeps under pids.max 20; stderr %q", len(lines), res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "fork") {
		t.Errorf("stderr %q, want a failed fork", res.Stderr)
	}
}

// TestCgroupUsageAndSetLimits: Usage counts the sandbox's tasks and memory; SetLimits
// changes the limits of a running sandbox and 0 lifts them.
func TestCgroupUsageAndSetLimits(t *testing.T) {
	requireV1(t, "pids")
	requireV1(t, "memory")
	requireV1(t, "cpu")
	t.Parallel()
	s := newTestSandbox(t, nil)
	u0, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	// The namespace driver's init is in the pids group too, with its threads: should
	// Go's scheduler start one more meanwhile, it is not the shell's.
	threads0 := initThreads(t, s)
	// The shell forks its sleeps only once it is in the pids and the memory groups
	// (entered one after the other just after it starts): a child forked before would
	// stay in the old memory group, and the sandbox's would show no memory.
	in := "grep -q 'pids:/.*sandgate' /proc/$$/cgroup && grep -q 'memory:/.*sandgate' /proc/$$/cgroup"
	if _, err := s.Start(testCtx(t), StartOptions{Command: "until " + in + "; do :; done; sleep 300 & sleep 300 & wait"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(bound)
	for {
		u, err := s.Usage()
		if err != nil {
			t.Fatal(err)
		}
		want := u0.Pids + 3 + initThreads(t, s) - threads0
		if u.Pids == want && u.MemoryBytes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage %+v, want %d pids and some memory", u, want)
		}
		time.Sleep(10 * time.Millisecond) // the shell forks its sleeps on its own time
	}
	for _, tt := range []struct {
		name            string
		lim             Limits
		mem, pids, quot string
		shares          string
	}{
		{"set", Limits{MemoryBytes: 256 << 20, Pids: 50, CPUMillis: 500}, "268435456", "50", "50000", "512"},
		{"lift", Limits{}, "9223372036854771712", "max", "-1", "1024"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.SetLimits(tt.lim); err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct{ dir, file, want string }{
				{s.cg.v1["memory"], "memory.limit_in_bytes", tt.mem},
				{s.cg.v1["pids"], "pids.max", tt.pids},
				{s.cg.v1["cpu"], "cpu.cfs_quota_us", tt.quot},
				{s.cg.v1["cpu"], "cpu.shares", tt.shares},
			} {
				b, err := os.ReadFile(filepath.Join(f.dir, f.file))
				if got := strings.TrimSpace(string(b)); err != nil || got != f.want {
					t.Errorf("%s = %q, %v; want %q", f.file, got, err, f.want)
				}
			}
		})
	}
}

// TestCgroupSweep: the sweep kills and removes a leftover tree of a dead run in its
// scope, and reports its sandbox; another scope's leftover and a live sandbox of the
// same scope are left alone.
func TestCgroupSweep(t *testing.T) {
	requireContainment(t)
	t.Parallel()
	scope, other := "test-sweep-"+randomHex(4), "test-other-"+randomHex(4)
	crashed := func(scope, id string) (*sandboxCgroup, *exec.Cmd, <-chan struct{}) {
		c, err := newSandboxCgroup(scope, id, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := c.newTree()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("setsid", "sleep", "300")
		tree.attach(cmd)
		err = cmd.Start()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		// The run "crashes": its lock and fds go, its groups and processes stay.
		tree.mu.Lock()
		tree.closeLocked()
		tree.mu.Unlock()
		_ = c.lock.Close()
		liveCgroups.Delete(c)
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
			c.lock = nil
			_ = c.destroy()
		})
		return c, cmd, done
	}
	dead, _, deadDone := crashed(scope, "sb-a")
	kept, keptCmd, _ := crashed(other, "sb-b")
	live := newTestSandbox(t, &Config{Scope: scope, ID: "sb-live"})
	p, err := live.Start(testCtx(t), StartOptions{Command: "sleep 300"})
	if err != nil {
		t.Fatal(err)
	}

	ids, err := Sweep(scope)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"sb-a"}) {
		t.Errorf("swept %q, want [sb-a]", ids)
	}
	select {
	case <-deadDone:
	case <-time.After(bound):
		t.Fatal("the leftover process still runs after Sweep")
	}
	if fileExists(dead.v2) {
		t.Errorf("leftover group %s not removed", dead.v2)
	}
	for _, d := range dead.v1dirs() {
		if fileExists(d) {
			t.Errorf("leftover group %s not removed", d)
		}
	}
	if pidGone(keptCmd.Process.Pid) || !isDir(kept.v2) {
		t.Errorf("Sweep(%q) touched scope %q", scope, other)
	}
	if p.Info().Status != StatusRunning || !isDir(live.cg.v2) {
		t.Errorf("Sweep ended a live sandbox of its scope")
	}
}

// TestContainment: this machine kind has cgroup2 with cgroup.kill and the v1 memory,
// pids and cpu controllers, and Containment says so.
func TestContainment(t *testing.T) {
	t.Parallel()
	got, err := Containment()
	if err != nil {
		t.Fatalf("Containment: %q, %v", got, err)
	}
	for _, want := range []string{"cgroup2 under ", "pids (v", "memory (v", "cpu (v"} {
		if !strings.Contains(got, want) {
			t.Errorf("Containment() = %q, want it to name %q", got, want)
		}
	}
}

// initThreads returns the number of threads of the namespace driver's init of s, or 0
// on the local driver.
func initThreads(tb testing.TB, s *Sandbox) int {
	tb.Helper()
	h, ok := s.h.(*nsHost)
	if !ok {
		return 0
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(h.in.PID()) + "/task")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// TestRetryEINTR: a control file operation interrupted by a signal is tried again;
// any other outcome is returned as it is.
func TestRetryEINTR(t *testing.T) {
	t.Parallel()
	calls := 0
	err := retryEINTR(func() error {
		if calls++; calls < 3 {
			return unix.EINTR
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after two EINTR: %v in %d calls, want success in 3", err, calls)
	}
	calls = 0
	if err := retryEINTR(func() error { calls++; return unix.EBUSY }); !errors.Is(err, unix.EBUSY) || calls != 1 {
		t.Fatalf("EBUSY: %v in %d calls, want it returned at once", err, calls)
	}
}
