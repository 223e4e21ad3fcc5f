package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/leakcheck"
)

// TestSessionBackgroundHolderExactOutput: a background child keeps stdout open (so no
// EOF comes) while the foreground writes more than a pipe buffer; all of it arrives.
func TestSessionBackgroundHolderExactOutput(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	tests := []struct {
		name    string
		command string
		want    []byte
	}{
		{name: "sleeping holder", command: `sleep 1000 & head -c 300000 /dev/zero | tr '\0' x`, want: bytes.Repeat([]byte("x"), 300000)},
		{name: "holder on both", command: `sleep 1000 2>&1 & printf 'no newline'`, want: []byte("no newline")},
		{name: "endless writer on stderr", command: `yes >&2 & printf done`, want: []byte("done")},
	}
	for _, tt := range tests {
		r := sessRun(t, s, tt.command)
		if !bytes.Equal(r.Stdout, tt.want) || r.ExitCode != 0 {
			t.Errorf("%s: stdout %q (len %d), exit %d", tt.name, sessTrunc(r.Stdout), len(r.Stdout), r.ExitCode)
		}
	}
	if r := sessRun(t, s, "echo fine"); string(r.Stdout) != "fine\n" || len(r.Stderr) != 0 {
		t.Errorf("after: %q %q", r.Stdout, sessTrunc(r.Stderr))
	}
}

func TestSessionContextCanceledWhileRunning(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	sessRun(t, s, "mkfifo gate")
	ctx, cancel := context.WithCancel(sessTestCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, SessionCommand{Command: "read line < gate; cd /; export AFTER=1"})
		errc <- err
	}()
	sessWaitFor(t, "busy", func() bool { return s.Info().Status == SessionBusy })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// The command runs on; the next one waits for it and sees its effects.
	next := make(chan ExecResult, 1)
	go func() { next <- sessRun(t, s, `pwd; echo $AFTER`) }()
	sessWaitFor(t, "next queued", func() bool { return s.queued() == 1 })
	if err := os.WriteFile(filepath.Join(cfg.Dir, "gate"), []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := <-next; string(r.Stdout) != "/\n1\n" {
		t.Errorf("next = %q", r.Stdout)
	}
}

// TestSessionLeaks runs every way a session can end and checks that no goroutine, fd
// or child process outlives it. Not parallel: leakcheck counts the whole process.
func TestSessionLeaks(t *testing.T) {
	// The Go runtime opens its poller's fds on first use, for good: do that first.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	leakcheck.Check(t)
	ctx := sessTestCtx(t)
	ends := []struct {
		name string
		end  func(s *Session)
	}{
		{"close idle", func(s *Session) {}},
		{"timeout", func(s *Session) {
			sessMustExec(t, s, SessionCommand{Command: "sleep 1000 & setsid sleep 1000 & sleep 1000", Timeout: 100 * time.Millisecond})
		}},
		{"exit", func(s *Session) { sessRun(t, s, "sleep 1000 & exit 3") }},
		{"close busy", func(s *Session) {
			go func() { _, _ = s.Exec(ctx, SessionCommand{Command: "sleep 1000"}) }()
			sessWaitFor(t, "busy", func() bool { return s.Info().Status == SessionBusy })
		}},
		{"background holder", func(s *Session) { sessRun(t, s, "sleep 1000 & echo x") }},
	}
	for _, e := range ends {
		cfg := sessTestConfig(t)
		s, err := newSession(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sessRun(t, s, "cd /; export A=1; echo hi")
		e.end(s)
		if err := s.Close(ctx); err != nil {
			t.Errorf("%s: Close: %v", e.name, err)
		}
		if err := s.Close(ctx); err != nil {
			t.Errorf("%s: second Close: %v", e.name, err)
		}
		if _, err := os.Stat(s.tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: private dir left: %v", e.name, err)
		}
	}
	// newSession failing half-way cleans up too.
	cfg := sessTestConfig(t)
	cfg.Options.Shell = "/nonexistent/bash"
	if _, err := newSession(ctx, cfg); err == nil || !strings.Contains(err.Error(), "bash") {
		t.Errorf("bad shell: %v", err)
	}
}

// TestSessionShellEnds covers the other ways a command can end the shell.
func TestSessionShellEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		command    string
		wantCode   int
		wantReason string
	}{
		{name: "set -e then a failure", command: "set -e; false; echo not reached", wantCode: 1, wantReason: "shell exited with status 1"},
		{name: "exec replaces the shell", command: "exec sh -c 'exit 5'", wantCode: 5, wantReason: "shell exited with status 5"},
		{name: "killed", command: "kill -KILL $$", wantCode: 137, wantReason: "shell killed by signal 9 (killed)"},
		{name: "exit in a sourced file", command: "echo 'exit 9' > f.sh; . ./f.sh", wantCode: 9, wantReason: "shell exited with status 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := sessNewTest(t, sessTestConfig(t))
			r := sessRun(t, s, tt.command)
			if r.ExitCode != tt.wantCode || len(r.Stdout) != 0 {
				t.Errorf("result = %+v %q", r, r.Stdout)
			}
			if info := s.Info(); info.Status != SessionDead || info.DeadReason != tt.wantReason {
				t.Errorf("info = %v %q, want dead %q", info.Status, info.DeadReason, tt.wantReason)
			}
			if _, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "true"}); !errors.Is(err, ErrSessionDead) {
				t.Errorf("exec after: %v", err)
			}
		})
	}
}

func TestSessionAfterClose(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	calls := 0
	s.setAfterClose(func() { calls++ })
	for range 2 {
		if err := s.Close(sessTestCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("afterClose ran %d times, want 1", calls)
	}
	late := false
	s.setAfterClose(func() { late = true })
	if !late {
		t.Errorf("afterClose set after Close did not run at once")
	}
}

// TestSessionHostileSettings: shell options, aliases and functions a user may set must
// not break the framing of later commands.
func TestSessionHostileSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup string
	}{
		{name: "nounset", setup: "set -u"},
		{name: "noclobber", setup: "set -C"},
		{name: "xtrace", setup: "set -x"},
		{name: "posix mode", setup: "set -o posix"},
		{name: "IFS digits", setup: "IFS=0123456789"},
		{name: "noglob", setup: "set -f"},
		{name: "alias dot", setup: "alias .=false; alias source=false; alias '{'=false"},
		{name: "builtin shadows", setup: "printf() { :; }; export() { :; }; pwd() { :; }; cd() { :; }; echo() { command echo \"$@\"; }"},
		{name: "redefine helpers", setup: "__sg_f() { :; }; unset -f __sg_f __sg_pre __sg_post; __sg_d=/tmp"},
		{name: "no aliases", setup: "shopt -u expand_aliases"},
		{name: "DEBUG and ERR traps", setup: "trap 'echo dbg' DEBUG; trap 'echo err' ERR"},
		{name: "pipefail errexit-free", setup: "set -o pipefail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := sessTestConfig(t)
			s := sessNewTest(t, cfg)
			sessMustExec(t, s, SessionCommand{Command: "mkdir sub"})
			sessRun(t, s, tt.setup)
			for _, c := range []SessionCommand{
				{Command: `builtin echo ok; builtin export K=v`},
				{Command: `builtin echo "$K $PC"`, Cwd: "sub", Env: map[string]string{"PC": "pc"}},
				{Command: `builtin echo "$K ${PC-unset}"`},
			} {
				r := sessMustExec(t, s, c)
				if r.ExitCode != 0 || len(r.Stdout) == 0 {
					t.Errorf("%q: exit %d stdout %q stderr %q", c.Command, r.ExitCode, r.Stdout, r.Stderr)
				}
			}
			snap := s.Snapshot()
			if snap.Env["K"] != "v" || snap.Cwd != cfg.Dir {
				t.Errorf("snapshot = %q %q", snap.Cwd, snap.Env["K"])
			}
			if _, ok := snap.Env["PC"]; ok {
				t.Errorf("per-call env persisted")
			}
		})
	}
}

// TestSessionPerCallBigEnv: a long per-call value (all bytes but NUL, 1 MiB) arrives
// intact and does not persist.
func TestSessionPerCallBigEnv(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	var v []byte
	for len(v) < 1<<20 {
		for c := 1; c < 256; c++ {
			v = append(v, byte(c))
		}
	}
	r := sessMustExec(t, s, SessionCommand{Command: `printf %s "$BIG"`, Env: map[string]string{"BIG": string(v)}, OutputLimit: 2 << 20})
	if !bytes.Equal(r.Stdout, v) {
		t.Errorf("value came back with %d bytes, want %d", len(r.Stdout), len(v))
	}
	if r := sessRun(t, s, `echo "${BIG-unset}"`); string(r.Stdout) != "unset\n" {
		t.Errorf("after: %q", sessTrunc(r.Stdout))
	}
}
