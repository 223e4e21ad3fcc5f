package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessTestWait bounds every wait in session tests; generous for loaded machines.
const sessTestWait = 60 * time.Second

func sessTestCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessTestWait)
	tb.Cleanup(cancel)
	return ctx
}

// sessTestConfig returns a config for a session in a fresh workspace.
func sessTestConfig(tb testing.TB) sessionConfig {
	tb.Helper()
	dir := tb.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return sessionConfig{
		Dir: dir,
		// A bare session on the local driver, as a Sandbox without cgroups runs it.
		sb: &Sandbox{dir: dir, guest: dir, h: localHost{}},
		Env: map[string]string{
			"PATH": os.Getenv("PATH"),
			"HOME": dir,
			"LANG": "C.UTF-8",
		},
	}
}

// sessNewTest starts a session and closes it when the test ends.
func sessNewTest(tb testing.TB, cfg sessionConfig) *Session {
	tb.Helper()
	s, err := newSession(sessTestCtx(tb), cfg)
	if err != nil {
		tb.Fatalf("newSession: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// sessMustExec runs a command that must not fail to run.
func sessMustExec(tb testing.TB, s *Session, c SessionCommand) ExecResult {
	tb.Helper()
	r, err := s.Exec(sessTestCtx(tb), c)
	if err != nil {
		tb.Fatalf("Exec(%q): %v", c.Command, err)
	}
	return r
}

// sessRun is mustExec for a bare command.
func sessRun(tb testing.TB, s *Session, command string) ExecResult {
	tb.Helper()
	return sessMustExec(tb, s, SessionCommand{Command: command})
}

func sessTrunc(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:80:80], "..."...)
	}
	return b
}

// sessWaitFor polls cond until it holds, failing after sessTestWait.
func sessWaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(sessTestWait)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// sessAlive reports whether pid exists and is not a zombie.
func sessAlive(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// sessWaitShellIdle waits until the shell blocks in read(0, …), the state between commands.
func sessWaitShellIdle(tb testing.TB, pid int) {
	tb.Helper()
	nr := map[string]string{"amd64": "0", "arm64": "63"}[goruntime.GOARCH]
	if nr == "" {
		tb.Skip("no read syscall number for " + goruntime.GOARCH)
	}
	sessWaitFor(tb, "shell idle", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
		return strings.HasPrefix(string(b), nr+" 0x0 ")
	})
}

// sessInheritedFDs lists this process's fds above 2 that lack close-on-exec.
func sessInheritedFDs(tb testing.TB) map[string]bool {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil || e.Name() == "0" || e.Name() == "1" || e.Name() == "2" {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if flags&syscall.O_CLOEXEC == 0 {
					out[e.Name()] = true
				}
			}
		}
	}
	return out
}
