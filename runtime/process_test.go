package runtime

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessPipes(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	tests := []struct {
		name   string
		o      StartOptions
		input  string // written, then stdin closed
		stdout string
		stderr string
		exit   ExitStatus
	}{
		{name: "separate streams exact", o: StartOptions{Command: `printf 'o\000ut'; printf 'e\000rr' >&2; exit 3`}, stdout: "o\x00ut", stderr: "e\x00rr", exit: ExitStatus{Code: 3}},
		{name: "argv", o: StartOptions{Argv: []string{"printf", "%s", "a b"}}, stdout: "a b"},
		{name: "stdin pipe and eof", o: StartOptions{Argv: []string{"cat"}}, input: "hello\x00world", stdout: "hello\x00world"},
		{name: "killed by signal", o: StartOptions{Command: "kill -TERM $$"}, exit: ExitStatus{Code: -1, Signal: "SIGTERM"}},
		{name: "timeout kills tree", o: StartOptions{Command: "sleep 30; echo never", Timeout: 200 * time.Millisecond}, exit: ExitStatus{Code: -1, Signal: "SIGKILL"}},
		{name: "env and cwd", o: StartOptions{Command: `printf '%s:%s' "$X" "$(pwd)"`, Env: map[string]string{"X": "y"}}, stdout: "y:" + s.GuestDir()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			p, err := s.Start(ctx, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			sub := p.Subscribe(0)
			defer sub.Close()
			if tt.input != "" {
				if _, err := p.Write([]byte(tt.input)); err != nil {
					t.Fatal(err)
				}
				if err := p.CloseStdin(); err != nil {
					t.Fatal(err)
				}
				if _, err := p.Write([]byte("x")); !errors.Is(err, ErrStdinClosed) && !errors.Is(err, ErrExited) {
					t.Errorf("write after close: %v", err)
				}
			}
			c := collect(t, ctx, sub)
			if string(c.stdout) != tt.stdout || string(c.stderr) != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", c.stdout, c.stderr, tt.stdout, tt.stderr)
			}
			if c.exit == nil || *c.exit != tt.exit {
				t.Errorf("exit event %+v, want %+v", c.exit, tt.exit)
			}
			st, err := p.Wait(ctx)
			if err != nil || st != tt.exit {
				t.Errorf("Wait = %+v, %v", st, err)
			}
			info := p.Info()
			if info.Status != StatusExited || info.Exit == nil || info.ExitedAt == nil || info.OutputOffset != int64(len(tt.stdout)+len(tt.stderr)) {
				t.Errorf("info %+v", info)
			}
			if !strings.HasPrefix(p.ID(), "proc_") || len(p.ID()) != 21 {
				t.Errorf("id %q", p.ID())
			}
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
				t.Errorf("signal after exit: %v", err)
			}
			if _, err := p.Write([]byte("x")); !errors.Is(err, ErrExited) {
				t.Errorf("write after exit: %v", err)
			}
		})
	}
}

func TestProcessSignal(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	tests := []struct {
		name string
		sig  string
		pty  bool
		want string
	}{
		{name: "by name", sig: "SIGUSR1", want: "SIGUSR1"},
		{name: "short name", sig: "int", want: "SIGINT"},
		{name: "by number", sig: "15", want: "SIGTERM"},
		{name: "on pty", sig: "HUP", pty: true, want: "SIGHUP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			o := StartOptions{Argv: []string{"sleep", "30"}}
			if tt.pty {
				o.PTY = &WinSize{Cols: 80, Rows: 24}
			}
			p, err := s.Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := ParseSignal(tt.sig)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Signal(sig); err != nil {
				t.Fatal(err)
			}
			st, err := p.Wait(ctx)
			if err != nil || st.Signal != tt.want || st.Code != -1 {
				t.Errorf("exit %+v %v, want %s", st, err, tt.want)
			}
		})
	}
}

func TestProcessKill(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	s := newTestSandbox(t, &Config{KillGrace: grace})
	tests := []struct {
		name    string
		command string
		pty     bool
		minTime time.Duration // a TERM-ignoring tree waits for the grace
	}{
		{name: "term trapping loop", command: "trap '' TERM; echo $$; while :; do sleep 0.1; done", minTime: grace},
		{name: "background grandchild", command: "sleep 30 & echo $!; wait"},
		{name: "term ignoring grandchild", command: "(trap '' TERM; echo $(exec sh -c 'echo $PPID'); while :; do sleep 0.1; done) & wait"},
		{name: "pty background grandchild", command: "sleep 30 & echo $!; wait", pty: true},
		{name: "pty term and hup trapping loop", command: "trap '' TERM HUP; echo $$; while :; do sleep 0.1; done", pty: true, minTime: grace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			o := StartOptions{Command: tt.command}
			if tt.pty {
				o.PTY = &WinSize{Cols: 80, Rows: 24}
			}
			p, err := s.Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			sub := p.Subscribe(0)
			defer sub.Close()
			out := waitOutput(t, ctx, sub, "\n")
			pid := hostPID(t, s, firstInt(t, []byte(strings.TrimSpace(out))))
			begin := time.Now()
			if err := p.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			d := time.Since(begin)
			if d < tt.minTime || d > grace+time.Second {
				t.Errorf("Kill took %v, want [%v, %v]", d, tt.minTime, grace+time.Second)
			}
			waitGone(t, pid)
			if err := p.Kill(ctx); err != nil {
				t.Errorf("second Kill: %v", err)
			}
		})
	}
}

func TestProcessPTY(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Command: "stty size; read x; stty size; cat", PTY: &WinSize{Cols: 100, Rows: 30}})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	waitOutput(t, ctx, sub, "30 100")
	if err := p.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info.Cols != 120 || info.Rows != 40 || !info.PTY {
		t.Errorf("info %+v", info)
	}
	if _, err := p.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, ctx, sub, "40 120")
	if _, err := p.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, ctx, sub, "ping\r\nping\r\n") // echo, then cat's copy
	if err := p.CloseStdin(); err != nil {      // ^D: cat sees EOF
		t.Fatal(err)
	}
	c := collect(t, ctx, sub)
	if c.exit == nil || *c.exit != (ExitStatus{}) {
		t.Errorf("exit %+v", c.exit)
	}
	if len(c.stdout)+len(c.stderr) != 0 {
		t.Errorf("pipe streams on a pty")
	}
	if err := p.Resize(1, 1); !errors.Is(err, ErrExited) {
		t.Errorf("resize after exit: %v", err)
	}
}

func TestProcessNotPTY(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	p, err := s.Start(testCtx(t), StartOptions{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(10, 10); !errors.Is(err, ErrNotPTY) {
		t.Errorf("err = %v", err)
	}
	if _, err := p.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestPTYNoLoss: a process that prints 1 MiB and exits on a PTY never loses a byte.
func TestPTYNoLoss(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	s := newTestSandbox(t, &Config{OutputBufferBytes: 2 * size})
	runs := 100
	if testing.Short() {
		runs = 10
	}
	for i := range runs {
		ctx := testCtx(t)
		p, err := s.Start(ctx, StartOptions{Command: "head -c 1048576 /dev/zero | tr '\\0' x", PTY: &WinSize{Cols: 80, Rows: 24}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		sub := p.Subscribe(0)
		c := collect(t, ctx, sub)
		sub.Close()
		if len(c.pty) != size || bytes.Count(c.pty, []byte("x")) != size {
			t.Fatalf("run %d: got %d bytes, want %d", i, len(c.pty), size)
		}
		if err := s.Remove(ctx, p.ID()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSubscribers: a stalled subscriber gets an exact gap and never slows the other.
func TestSubscribers(t *testing.T) {
	t.Parallel()
	const (
		ring  = 128 << 10
		block = 32 << 10
		n     = 32
	)
	s := newTestSandbox(t, &Config{OutputBufferBytes: ring})
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Command: "while read x; do head -c 32768 /dev/zero; done"})
	if err != nil {
		t.Fatal(err)
	}
	stalled := p.Subscribe(0)
	defer stalled.Close()
	fast := p.Subscribe(0)
	defer fast.Close()
	if p.Attached() != 2 {
		t.Errorf("attached %d", p.Attached())
	}
	begin := time.Now()
	var got int64
	for i := range n {
		if _, err := p.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		for got < int64(i+1)*block {
			ev, err := fast.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != EventOutput || ev.Offset != got {
				t.Fatalf("fast subscriber got %v at %d, want output at %d", ev.Kind, ev.Offset, got)
			}
			got += int64(len(ev.Data))
		}
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	c := collect(t, ctx, fast)
	if c.exit == nil || len(c.events) != 1 || len(c.stdout) != 0 {
		t.Fatalf("fast tail: %+v", c.events)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("fast subscriber took %v", d)
	}
	// Stall for 2 s in all, then read.
	select {
	case <-time.After(2*time.Second - time.Since(begin)):
	case <-ctx.Done():
	}
	sc := collect(t, ctx, stalled)
	const total = n * block
	want := []Event{{Kind: EventGap, From: 0, To: total - ring}, {Kind: EventExit}}
	if len(sc.events) != 2 || sc.events[0].Kind != want[0].Kind || sc.events[0].From != want[0].From || sc.events[0].To != want[0].To || sc.events[1].Kind != EventExit {
		t.Fatalf("stalled events %+v, want %+v", sc.events, want)
	}
	if len(sc.stdout) != ring {
		t.Errorf("stalled got %d bytes after the gap, want %d", len(sc.stdout), ring)
	}
	if info := p.Info(); info.OutputOffset != total || info.OutputDropped != total-ring {
		t.Errorf("info offsets %d %d", info.OutputOffset, info.OutputDropped)
	}
	stalled.Close()
	fast.Close()
	if p.Attached() != 0 {
		t.Errorf("attached %d after close", p.Attached())
	}
}

func TestSubscribeLive(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Command: "printf old; read x; printf new"})
	if err != nil {
		t.Fatal(err)
	}
	first := p.Subscribe(0)
	defer first.Close()
	waitOutput(t, ctx, first, "old")
	live := p.Subscribe(-1)
	defer live.Close()
	if _, err := p.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	c := collect(t, ctx, live)
	if string(c.stdout) != "new" || c.exit == nil {
		t.Errorf("live got %q %+v", c.stdout, c.exit)
	}
	// Past the end means the end.
	late := p.Subscribe(1 << 40)
	defer late.Close()
	c = collect(t, ctx, late)
	if len(c.stdout) != 0 || c.exit == nil {
		t.Errorf("late got %q", c.stdout)
	}
	// Next after ctx end.
	sub := p.Subscribe(0)
	sub.Close()
	if _, err := sub.Next(ctx); err == nil {
		t.Errorf("Next after Close returned no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s2 := newTestSandbox(t, nil)
	q, err := s2.Start(ctx, StartOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	qs := q.Subscribe(-1)
	defer qs.Close()
	if _, err := qs.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with done ctx: %v", err)
	}
	if _, err := q.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with done ctx: %v", err)
	}
}
