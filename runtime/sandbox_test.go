package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  *Config
		err  error
	}{
		{name: "nil config has no dir", cfg: nil, err: ErrInvalid},
		{name: "negative cap", cfg: &Config{Dir: t.TempDir(), MaxProcesses: -1}, err: ErrInvalid},
		{name: "creates dir", cfg: &Config{Dir: filepath.Join(t.TempDir(), "a", "b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tt.cfg)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			defer s.Close(testCtx(t))
			if fi, err := os.Stat(s.Dir()); err != nil || !fi.IsDir() || !filepath.IsAbs(s.Dir()) {
				t.Errorf("dir %q: %v", s.Dir(), err)
			}
		})
	}
}

func TestMaxProcesses(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{MaxProcesses: 2})
	ctx := testCtx(t)
	a, err := s.Start(ctx, StartOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTerminal(ctx, TerminalOptions{ID: "t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx, StartOptions{Argv: []string{"true"}}); !errors.Is(err, ErrTooManyProcesses) {
		t.Fatalf("third start: %v", err)
	}
	if _, err := s.StartTerminal(ctx, TerminalOptions{ID: "t2"}); !errors.Is(err, ErrTooManyProcesses) {
		t.Fatalf("third terminal: %v", err)
	}
	if res, err := s.Exec(ctx, ExecOptions{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec is not capped: %v", err)
	}
	if s.Running() != 2 {
		t.Errorf("running %d", s.Running())
	}
	if err := s.Remove(ctx, a.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Process(a.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed process: %v", err)
	}
	if s.Running() != 1 {
		t.Errorf("running %d after remove", s.Running())
	}
	if _, err := s.Start(ctx, StartOptions{Argv: []string{"true"}}); err != nil {
		t.Fatalf("start after remove: %v", err)
	}
}

func TestStartOptions(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	if _, err := s.Start(ctx, StartOptions{ID: "fixed", Argv: []string{"sleep", "30"}, Tag: "web", Label: "L", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    StartOptions
		err  error
	}{
		{name: "duplicate id", o: StartOptions{ID: "fixed", Argv: []string{"true"}}, err: ErrDuplicateID},
		{name: "bad id", o: StartOptions{ID: "Bad!", Argv: []string{"true"}}, err: ErrInvalid},
		{name: "missing binary", o: StartOptions{Argv: []string{"no-such-binary-xyz"}}, err: ErrInvalid},
		{name: "cwd escape", o: StartOptions{Argv: []string{"true"}, Cwd: ".."}, err: ErrInvalid},
		{name: "zero pty size", o: StartOptions{Argv: []string{"true"}, PTY: &WinSize{}}, err: ErrInvalid},
		{name: "both forms", o: StartOptions{Command: "true", Argv: []string{"true"}}, err: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A context of the subtest's own: a parallel subtest may wait for a slot
			// longer than the parent's context lives.
			if _, err := s.Start(testCtx(t), tt.o); !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
		})
	}
	p, err := s.Process("fixed")
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	if info.Tag != "web" || info.Label != "L" || info.Session != "s1" || info.PID <= 0 || info.Status != StatusRunning || info.Exit != nil || info.Argv[0] != "sleep" || info.Cwd != s.GuestDir() {
		t.Errorf("info %+v", info)
	}
}

func TestKeep(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	short, err := s.Start(ctx, StartOptions{Argv: []string{"true"}, Keep: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	long, err := s.Start(ctx, StartOptions{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Process{short, long} {
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Process(long.ID()); err != nil {
		t.Errorf("default keep dropped the record: %v", err)
	}
	deadline := time.Now().Add(bound)
	for {
		if _, err := s.Process(short.ID()); errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record kept past Keep")
		}
		time.Sleep(20 * time.Millisecond) // the drop has no event to wait on
	}
	if ps := s.Processes(); len(ps) != 1 || ps[0] != long {
		t.Errorf("processes %v", ps)
	}
}

func TestProcessesOrder(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	var want []string
	for range 5 {
		p, err := s.Start(ctx, StartOptions{Argv: []string{"sleep", "30"}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, p.ID())
	}
	var got []string
	for _, p := range s.Processes() {
		got = append(got, p.ID())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	s, err := New(&Config{Dir: t.TempDir(), KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	var ps []*Process
	for _, o := range []StartOptions{
		{Command: "trap '' TERM; sleep 30 & wait"},
		{Command: "sleep 30", PTY: &WinSize{Cols: 80, Rows: 24}},
	} {
		p, err := s.Start(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	term, err := s.StartTerminal(ctx, TerminalOptions{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ps = append(ps, term)
	execDone := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, ExecOptions{Command: "sleep 30"})
		execDone <- err
	}()
	closed := false
	unreg, ok := s.onClose(func(ctx context.Context) error { closed = true; return nil })
	if !ok || unreg == nil {
		t.Fatal("onClose refused")
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	for _, p := range ps {
		select {
		case <-p.Done():
		default:
			t.Errorf("process %s not done after Close", p.ID())
		}
	}
	if !closed {
		t.Errorf("close hook not run")
	}
	if err := <-execDone; err != nil {
		t.Logf("exec during close: %v", err)
	}
	if _, err := s.Start(ctx, StartOptions{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close: %v", err)
	}
	if _, ok := s.onClose(func(context.Context) error { return nil }); ok {
		t.Errorf("onClose after close")
	}
}

// TestNoFDLeak: a child sees only fds 0, 1 and 2, also while other processes (pipes and
// PTYs) are being started concurrently.
func TestNoFDLeak(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	// The shell lists its own fds through ls, a separate process.
	const list = "ls -l /proc/$$/fd"
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var got string
			switch i % 4 {
			case 0:
				res, err := s.Exec(ctx, ExecOptions{Command: list})
				if err != nil {
					t.Error(err)
					return
				}
				got = string(res.Stdout)
			case 1:
				res, err := s.Exec(ctx, ExecOptions{Command: list, Stdin: []byte("x")})
				if err != nil {
					t.Error(err)
					return
				}
				got = string(res.Stdout)
			case 2, 3:
				o := StartOptions{Command: list}
				if i%4 == 3 {
					o.PTY = &WinSize{Cols: 200, Rows: 24}
				}
				p, err := s.Start(ctx, o)
				if err != nil {
					t.Error(err)
					return
				}
				sub := p.Subscribe(0)
				defer sub.Close()
				c := collect(t, ctx, sub)
				got = string(c.stdout) + string(c.pty)
			}
			if fds := strings.Join(fdNames(got), " "); fds != "0 1 2" {
				t.Errorf("case %d: child fds %q, want 0 1 2", i%4, got)
			}
		})
	}
	wg.Wait()
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{Env: map[string]string{"TERM": "dumb"}})
	ctx := testCtx(t)
	p, err := s.StartTerminal(ctx, TerminalOptions{ID: "t1", Cols: 90, Rows: 33, Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	if info.Tag != "terminal:t1" || !info.PTY || info.Cols != 90 || info.Rows != 33 {
		t.Errorf("info %+v", info)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	if _, err := p.Write([]byte("echo \"T=$TERM\"; stty size; tty\n")); err != nil {
		t.Fatal(err)
	}
	// stty size runs after echo: its output comes later in the same stream.
	if out := waitOutput(t, ctx, sub, "33 90"); !strings.Contains(out, "T=xterm-256color") {
		t.Errorf("TERM not set: %q", out)
	}
	if _, err := p.Write([]byte("exit 5\n")); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(ctx)
	if err != nil || st.Code != 5 {
		t.Errorf("exit %+v %v", st, err)
	}
	if _, err := s.StartTerminal(ctx, TerminalOptions{ID: "Bad Id"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
}

// TestTerminalKill: an interactive shell ignores SIGTERM and puts jobs in groups of
// their own; Kill still ends all of them.
func TestTerminalKill(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{KillGrace: 300 * time.Millisecond})
	ctx := testCtx(t)
	p, err := s.StartTerminal(ctx, TerminalOptions{ID: "k", Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	if _, err := p.Write([]byte("set -m; sleep 30 & echo \"BG=$!=\"\n")); err != nil {
		t.Fatal(err)
	}
	out := waitOutput(t, ctx, sub, "=\r\n")
	m := regexp.MustCompile(`BG=([0-9]+)=`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pid in %q", out)
	}
	pid := hostPID(t, s, firstInt(t, []byte(m[1])))
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// fdNames returns the fd numbers in the output of ls -l /proc/PID/fd, leaving out the
// directory ls itself opened to list them.
func fdNames(ls string) []string {
	var out []string
	for _, line := range strings.Split(ls, "\n") {
		f := strings.Fields(line)
		if i := slices.Index(f, "->"); i > 0 && i+1 < len(f) && !lsOwnFD.MatchString(f[i+1]) {
			out = append(out, f[i-1])
		}
	}
	return out
}

var lsOwnFD = regexp.MustCompile(`^/proc/[0-9]+/fd$`)

// TestNoFDLeakTerminal: a command run from a terminal's interactive shell sees only 0,
// 1 and 2 (bash keeps its own fd 255 close-on-exec).
func TestNoFDLeakTerminal(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.StartTerminal(ctx, TerminalOptions{ID: "fds", Cols: 200, Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	if _, err := p.Write([]byte("ls -l /proc/self/fd; echo \"END=$((6*7))=\"\n")); err != nil {
		t.Fatal(err)
	}
	out := waitOutput(t, ctx, sub, "END=42=")
	if fds := strings.Join(fdNames(out), " "); fds != "0 1 2" {
		t.Errorf("fds %q in %q", fds, out)
	}
}

// TestTerminalSignalForeground: SIGINT to a terminal reaches its foreground job (in a
// group of its own under job control) and leaves the interactive shell running.
func TestTerminalSignalForeground(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.StartTerminal(ctx, TerminalOptions{ID: "sig", Shell: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	if _, err := p.Write([]byte("set -m; sh -c 'echo \"FG=$$=\"; exec sleep 30'\n")); err != nil {
		t.Fatal(err)
	}
	out := waitOutput(t, ctx, sub, "=\r\n")
	m := regexp.MustCompile(`FG=([0-9]+)=`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pid in %q", out)
	}
	fg := hostPID(t, s, firstInt(t, []byte(m[1])))
	sig, _ := ParseSignal("SIGINT")
	if err := p.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitGone(t, fg)
	// Like ^C, the job's death by SIGINT also aborts the rest of the command line; the
	// shell itself survives and runs the next one.
	if _, err := p.Write([]byte("echo \"alive=$((1+1))=\"\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, ctx, sub, "alive=2=")
	if p.Info().Status != StatusRunning {
		t.Errorf("shell exited")
	}
}

// TestWithin: the clean path p is dir or below it, as strings.HasPrefix(p, dir+"/")
// says, and a sibling that only shares dir's name as a prefix is not.
func TestWithin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dir, p string
		want         bool
	}{
		{"same", "/a/b", "/a/b", true},
		{"child", "/a/b", "/a/b/c", true},
		{"grandchild", "/a/b", "/a/b/c/d", true},
		{"sibling with the same prefix", "/a/b", "/a/bc", false},
		{"parent", "/a/b", "/a", false},
		{"other", "/a/b", "/x/y", false},
		{"shorter", "/a/b", "/a/", false},
		{"root holds all", "/", "/x", true},
		{"root itself", "/", "/", true},
		{"empty path", "/a", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := within(tt.dir, tt.p); got != tt.want {
				t.Fatalf("within(%q, %q) = %v, want %v", tt.dir, tt.p, got, tt.want)
			}
			if old := tt.p == tt.dir || strings.HasPrefix(tt.p, tt.dir+"/") || tt.dir == "/"; old != tt.want {
				t.Fatalf("the concatenating form says %v for (%q, %q)", old, tt.dir, tt.p)
			}
		})
	}
}
