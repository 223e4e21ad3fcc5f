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
)

func TestExec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	s := newTestSandbox(t, &Config{Dir: dir, Env: map[string]string{"SB": "sandbox", "B": "sb"}, OutputBufferBytes: 1000})
	tests := []struct {
		name      string
		o         ExecOptions
		code      int
		stdout    string
		stderr    string // exact unless stderrHas
		stderrHas string
		truncated bool
		err       error
	}{
		{name: "nul bytes and no trailing newline", o: ExecOptions{Command: `printf 'a\000b\000'; printf 'e\000rr' >&2`}, stdout: "a\x00b\x00", stderr: "e\x00rr"},
		{name: "argv", o: ExecOptions{Argv: []string{"printf", "%s|", "x y", "z"}}, stdout: "x y|z|"},
		{name: "exit code", o: ExecOptions{Command: "exit 7"}, code: 7},
		{name: "killed by signal", o: ExecOptions{Command: "kill -USR1 $$"}, code: 128 + 10},
		{name: "env overlay", o: ExecOptions{Command: `printf '%s %s %s %s' "$SB" "$B" "$C" "$HOME"`, Env: map[string]string{"B": "call", "C": "c"}}, stdout: "sandbox call c " + s.GuestDir()},
		{name: "base env", o: ExecOptions{Command: `printf '%s' "$LANG"`}, stdout: "C.UTF-8"},
		{name: "default cwd", o: ExecOptions{Command: "pwd"}, stdout: s.GuestDir() + "\n"},
		{name: "relative cwd", o: ExecOptions{Command: "pwd", Cwd: "sub/dir"}, stdout: filepath.Join(s.GuestDir(), "sub/dir") + "\n"},
		{name: "absolute cwd inside", o: ExecOptions{Command: "pwd", Cwd: filepath.Join(s.Dir(), "sub")}, stdout: filepath.Join(s.GuestDir(), "sub") + "\n"},
		{name: "cleaned cwd inside", o: ExecOptions{Command: "pwd", Cwd: "sub/../sub/./dir/"}, stdout: filepath.Join(s.GuestDir(), "sub/dir") + "\n"},
		{name: "cwd dotdot escape", o: ExecOptions{Command: "pwd", Cwd: "../"}, err: ErrInvalid},
		{name: "cwd nested escape", o: ExecOptions{Command: "pwd", Cwd: "sub/../../x"}, err: ErrInvalid},
		{name: "cwd absolute outside", o: ExecOptions{Command: "pwd", Cwd: "/etc"}, err: ErrInvalid},
		{name: "cwd symlink out", o: ExecOptions{Command: "pwd", Cwd: "out"}, err: ErrInvalid},
		{name: "cwd missing", o: ExecOptions{Command: "pwd", Cwd: "nope"}, err: ErrInvalid},
		{name: "both command and argv", o: ExecOptions{Command: "true", Argv: []string{"true"}}, err: ErrInvalid},
		{name: "neither command nor argv", o: ExecOptions{}, err: ErrInvalid},
		{name: "stdin default is dev null", o: ExecOptions{Command: "cat; readlink /proc/self/fd/0"}, stdout: "/dev/null\n"},
		{name: "stdin given", o: ExecOptions{Command: "cat", Stdin: []byte("in\x00put")}, stdout: "in\x00put"},
		{name: "missing binary argv", o: ExecOptions{Argv: []string{"no-such-binary-xyz", "a"}}, code: 127, stderr: "no-such-binary-xyz: command not found\n"},
		{name: "missing binary path argv", o: ExecOptions{Argv: []string{"/no/such/binary"}}, code: 127, stderr: "/no/such/binary: command not found\n"},
		{name: "not executable argv", o: ExecOptions{Argv: []string{"./noexec"}}, code: 126, stderrHas: "permission denied"},
		{name: "missing binary command", o: ExecOptions{Command: "no-such-binary-xyz"}, code: 127, stderrHas: "not found"},
		{name: "output cap", o: ExecOptions{Command: "head -c 5000 /dev/zero | tr '\\0' a; printf e >&2"}, stdout: strings.Repeat("a", 1000), stderr: "e", truncated: true},
		{name: "call output limit", o: ExecOptions{Command: "printf abcdef", OutputLimit: 3}, stdout: "abc", truncated: true},
		{name: "both streams past the pipe buffer", o: ExecOptions{Command: "head -c 200000 /dev/zero | tr '\\0' a; head -c 100000 /dev/zero | tr '\\0' b >&2; printf c", OutputLimit: 1 << 20}, stdout: strings.Repeat("a", 200000) + "c", stderr: strings.Repeat("b", 100000)},
		{name: "output exactly at cap", o: ExecOptions{Command: "head -c 1000 /dev/zero"}, stdout: strings.Repeat("\x00", 1000)},
		// Around the first read's 512 bytes on the stack (readFD).
		{name: "output of 511", o: ExecOptions{Command: "head -c 511 /dev/zero | tr '\\0' a", OutputLimit: 4096}, stdout: strings.Repeat("a", 511)},
		{name: "output of 513", o: ExecOptions{Command: "head -c 513 /dev/zero | tr '\\0' a", OutputLimit: 4096}, stdout: strings.Repeat("a", 513)},
		{name: "limit 512, output 513", o: ExecOptions{Command: "head -c 513 /dev/zero | tr '\\0' a", OutputLimit: 512}, stdout: strings.Repeat("a", 512), truncated: true},
		{name: "limit 600, output 2000", o: ExecOptions{Command: "head -c 2000 /dev/zero | tr '\\0' a", OutputLimit: 600}, stdout: strings.Repeat("a", 600), truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := s.Exec(testCtx(t), tt.o)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", res.ExitCode, tt.code, res.Stderr)
			}
			if !bytes.Equal(res.Stdout, []byte(tt.stdout)) {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.stdout)
			}
			if tt.stderrHas != "" {
				if !strings.Contains(string(res.Stderr), tt.stderrHas) {
					t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tt.stderrHas)
				}
			} else if !bytes.Equal(res.Stderr, []byte(tt.stderr)) {
				t.Errorf("stderr = %q, want %q", res.Stderr, tt.stderr)
			}
			if res.Truncated != tt.truncated {
				t.Errorf("truncated = %v, want %v", res.Truncated, tt.truncated)
			}
			if res.TimedOut {
				t.Errorf("timed out")
			}
		})
	}
}

func TestExecKillsTree(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	tests := []struct {
		name     string
		command  string
		timeout  time.Duration
		timedOut bool
		code     int
		stdout   string // after the pid line
		maxTime  time.Duration
	}{
		// The grandchild is a separate sleep in the group; sh waits for it.
		{name: "timeout kills grandchild", command: "sh -c 'sleep 30' & echo $!; printf partial; wait", timeout: 300 * time.Millisecond, timedOut: true, code: 124, stdout: "partial", maxTime: 10 * time.Second},
		// The main process exits at once; the background child holds stdout open.
		{name: "background child killed at exit", command: "sleep 30 & echo $!; printf done", code: 0, stdout: "done", maxTime: 10 * time.Second},
		{name: "background child ignoring TERM killed at exit", command: "trap '' TERM; sleep 30 & echo $!", code: 0, maxTime: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			begin := time.Now()
			res, err := s.Exec(testCtx(t), ExecOptions{Command: tt.command, Timeout: tt.timeout})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(begin); d > tt.maxTime {
				t.Errorf("took %v", d)
			}
			if res.TimedOut != tt.timedOut || res.ExitCode != tt.code {
				t.Errorf("timed out %v code %d, want %v %d", res.TimedOut, res.ExitCode, tt.timedOut, tt.code)
			}
			pid := hostPID(t, s, firstInt(t, res.Stdout))
			_, rest, _ := strings.Cut(string(res.Stdout), "\n")
			if rest != tt.stdout {
				t.Errorf("stdout after pid = %q, want %q", rest, tt.stdout)
			}
			waitGone(t, pid)
		})
	}
}

// TestExecEscapedHolder: without cgroups, a child outside the group (setsid) keeps
// stdout open; the call still returns within the drain bound. (With containment the
// child dies with its tree: TestCgroupSetsidExec.)
func TestExecEscapedHolder(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{NoCgroups: true, Driver: LocalDriver{}})
	begin := time.Now()
	res, err := s.Exec(testCtx(t), ExecOptions{Command: "setsid sh -c 'echo $$ > pid; exec sleep 30' & " +
		"while [ ! -s pid ]; do sleep 0.01; done; cat pid"})
	if err != nil {
		t.Fatal(err)
	}
	pid := firstInt(t, res.Stdout)
	t.Cleanup(func() { _ = killPid(pid); waitGone(t, pid) })
	if d := time.Since(begin); d > drainBound+10*time.Second || d < drainBound {
		t.Errorf("took %v", d)
	}
}

func TestExecContextCancel(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	res, err := s.Exec(ctx, ExecOptions{Command: "echo $$; exec sleep 30"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, hostPID(t, s, firstInt(t, res.Stdout)))
}

func TestExecClosed(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	if err := s.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(testCtx(t), ExecOptions{Command: "true"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
