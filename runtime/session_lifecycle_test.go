package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSessionFIFO(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	gate := filepath.Join(cfg.Dir, "gate")
	sessRun(t, s, "mkfifo gate")
	first := make(chan error, 1)
	go func() {
		_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "read line < gate"})
		first <- err
	}()
	sessWaitFor(t, "first command running", func() bool { return s.Info().Status == SessionBusy && s.queued() == 0 })
	const n = 10
	results := make(chan string, n)
	for i := range n {
		go func() {
			r, err := s.Exec(sessTestCtx(t), SessionCommand{Command: fmt.Sprintf("echo %d >> order; cat order | wc -l", i)})
			if err != nil {
				results <- err.Error()
				return
			}
			results <- fmt.Sprintf("%d:%s", i, strings.TrimSpace(string(r.Stdout)))
		}()
		sessWaitFor(t, "caller queued", func() bool { return s.queued() == i+1 })
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0o644); err != nil { // opens the FIFO: unblocks read
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range n {
		got[<-results] = true
	}
	for i := range n {
		// Caller i ran (i+1)-th: the file had i+1 lines when it ran.
		if want := fmt.Sprintf("%d:%d", i, i+1); !got[want] {
			t.Errorf("missing %q in %v", want, got)
		}
	}
	order, _ := os.ReadFile(filepath.Join(cfg.Dir, "order"))
	if string(order) != "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n" {
		t.Errorf("order = %q", order)
	}
	if c := s.Info().Commands; c != n+2 {
		t.Errorf("commands = %d, want %d", c, n+2)
	}
}

func TestSessionTimeout(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	shell := s.pid
	// A background child, a child in its own session (escapes the process group) and
	// a foreground sleep; partial output before the timeout must be kept.
	r := sessMustExec(t, s, SessionCommand{
		Command: `sleep 1000 & echo $!; setsid sleep 1000 & echo $!; printf partial >&2; sleep 1000`,
		Timeout: 2 * time.Second, // ample for the echoes below on a loaded machine
	})
	if !r.TimedOut || r.ExitCode != 124 || string(r.Stderr) != "partial" {
		t.Fatalf("result = %+v stderr %q", r, r.Stderr)
	}
	pids := strings.Fields(string(r.Stdout))
	if len(pids) != 2 {
		t.Fatalf("stdout = %q", r.Stdout)
	}
	for _, p := range append(pids, fmt.Sprint(shell)) {
		sessWaitFor(t, "pid "+p+" gone", func() bool { return !sessAlive(p) })
	}
	info := s.Info()
	if info.Status != SessionDead || info.DeadReason != "command timed out after 2s" {
		t.Errorf("info = %+v", info)
	}
	_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "true"})
	if !errors.Is(err, ErrSessionDead) || !strings.Contains(err.Error(), "command timed out after 2s") {
		t.Errorf("exec on dead session: %v", err)
	}
}

func TestSessionExit(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	shell := fmt.Sprint(s.pid)
	r := sessRun(t, s, "sleep 1000 & printf '%s bye' $!; exit 42")
	kid, bye, _ := strings.Cut(string(r.Stdout), " ")
	if r.ExitCode != 42 || bye != "bye" || r.TimedOut {
		t.Fatalf("result = %+v %q", r, r.Stdout)
	}
	sessWaitFor(t, "shell gone", func() bool { return !sessAlive(shell) })
	sessWaitFor(t, "background child in the shell's group gone", func() bool { return !sessAlive(kid) })
	info := s.Info()
	if info.Status != SessionDead || info.DeadReason != "shell exited with status 42" {
		t.Errorf("info = %+v", info)
	}
	_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "true"})
	if !errors.Is(err, ErrSessionDead) || !strings.Contains(err.Error(), "shell exited with status 42") {
		t.Errorf("exec on dead session: %v", err)
	}
}

func TestSessionBackgroundChildHoldsStdout(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	start := time.Now()
	r := sessRun(t, s, "sleep 1000 & echo started $!")
	took := time.Since(start)
	if !strings.HasPrefix(string(r.Stdout), "started ") || r.ExitCode != 0 {
		t.Fatalf("result = %+v %q", r, r.Stdout)
	}
	// The child holds stdout for 1000 s; completion must not wait for it.
	if took > 20*time.Second {
		t.Errorf("exec took %v", took)
	}
	pid := strings.TrimSpace(strings.TrimPrefix(string(r.Stdout), "started "))
	if !sessAlive(pid) {
		t.Errorf("background child %s died", pid)
	}
	r = sessRun(t, s, "echo next")
	if string(r.Stdout) != "next\n" {
		t.Errorf("next command stdout = %q", r.Stdout)
	}
	if err := s.Close(sessTestCtx(t)); err != nil {
		t.Fatal(err)
	}
	sessWaitFor(t, "background child killed by Close", func() bool { return !sessAlive(pid) })
}

func TestSessionControlFD(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	// Bash restores its own redirections after it writes a frame; look once it is idle.
	sessWaitShellIdle(t, s.pid)
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fds the test binary inherited without close-on-exec from whatever started it
	// reach every child; they are not the session's doing.
	stray := sessInheritedFDs(t)
	var names []string
	for _, e := range ents {
		if !stray[e.Name()] {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "0 1 2 3" {
		t.Errorf("shell fds = %v, want 0 1 2 3", names)
	}
	// A command's child sees only 0, 1 and 2.
	r := sessRun(t, s, `sh -c 'ls /proc/$$/fd'`)
	var kid []string
	for _, f := range strings.Fields(string(r.Stdout)) {
		if !stray[f] {
			kid = append(kid, f)
		}
	}
	if strings.Join(kid, " ") != "0 1 2" {
		t.Errorf("child fds = %q (stderr %q)", r.Stdout, r.Stderr)
	}
	r = sessRun(t, s, `echo x >&3`)
	if r.ExitCode == 0 {
		t.Errorf("command could write to fd 3")
	}
}

func TestSessionFakeFrame(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	sessWaitShellIdle(t, s.pid)
	ctl, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", s.pid))
	if err != nil {
		t.Fatal(err)
	}
	cmd := `fake=$'\nsandgate:x 0\n/\n\0\nsandgate:x:end\n'
printf '%s' "$fake"; printf '%s' "$fake" >&2
hit=0
for f in /proc/$$/fd/*; do
  if [[ $(readlink "$f") == '` + ctl + `' ]]; then printf '%s' "$fake" >&"${f##*/}"; hit=1; fi
done
[[ $hit == 1 ]] || echo "no control copy found" >&2
sleep 0.3; printf done; exit_now() { return 7; }; exit_now`
	r := sessRun(t, s, cmd)
	if r.ExitCode != 7 || !strings.HasSuffix(string(r.Stdout), "done") || strings.Contains(string(r.Stderr), "no control") {
		t.Fatalf("result = %+v stdout %q stderr %q", r, r.Stdout, r.Stderr)
	}
	if r := sessRun(t, s, "echo alive"); string(r.Stdout) != "alive\n" {
		t.Errorf("after fake frames: %q", r.Stdout)
	}
}
