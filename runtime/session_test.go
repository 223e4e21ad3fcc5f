package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSessionPersistence(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "lib.sh"), []byte("LIBVAR=from-lib\nlibfn() { echo libfn:$1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sessNewTest(t, cfg)
	// Steps run in order on one shell; each sees what the earlier ones left.
	steps := []struct {
		name    string
		command string
		want    string
	}{
		{name: "cd", command: "cd 'sub dir'", want: ""},
		{name: "cd persists", command: "pwd", want: cfg.Dir + "/sub dir\n"},
		{name: "export", command: "export GREETING='hello world'", want: ""},
		{name: "export persists", command: `echo "$GREETING"; sh -c 'echo "$GREETING"'`, want: "hello world\nhello world\n"},
		{name: "plain variable", command: "plain=1", want: ""},
		{name: "plain variable persists", command: "echo $plain", want: "1\n"},
		{name: "declare persists", command: "declare -A m=([k]=v); declare -i n=41", want: ""},
		{name: "declare persists 2", command: "n+=1; echo ${m[k]} $n", want: "v 42\n"},
		{name: "alias", command: "alias hi='echo alias-hi'", want: ""},
		{name: "alias persists", command: "hi", want: "alias-hi\n"},
		{name: "function", command: "greet() { echo \"hi $1\"; }", want: ""},
		{name: "function persists", command: "greet bob", want: "hi bob\n"},
		{name: "source", command: "source ../lib.sh", want: ""},
		{name: "source persists", command: "echo $LIBVAR; libfn x", want: "from-lib\nlibfn:x\n"},
		{name: "return ends the command only", command: "echo a; return 5; echo b", want: "a\n"},
		{name: "shell still fine", command: "echo ok", want: "ok\n"},
		{name: "syntax error is the command's", command: "if then", want: ""},
		{name: "unterminated quote", command: "echo 'oops", want: ""},
		{name: "still fine", command: "echo $GREETING", want: "hello world\n"},
		{name: "cd -", command: "cd /; cd - >/dev/null; pwd", want: cfg.Dir + "/sub dir\n"},
	}
	for _, st := range steps {
		r := sessRun(t, s, st.command)
		if string(r.Stdout) != st.want {
			t.Errorf("%s: stdout = %q, want %q (stderr %q)", st.name, r.Stdout, st.want, r.Stderr)
		}
	}
	snap := s.Snapshot()
	if snap.Cwd != cfg.Dir+"/sub dir" || snap.Env["GREETING"] != "hello world" {
		t.Errorf("snapshot = %q %q", snap.Cwd, snap.Env["GREETING"])
	}
	if _, ok := snap.Env["plain"]; ok {
		t.Errorf("snapshot holds an unexported variable")
	}
}

func TestSessionByteExact(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB: several pipe buffers
	tests := []struct {
		name       string
		command    string
		wantOut    []byte
		wantErr    []byte
		wantStatus int
	}{
		{name: "no trailing newline", command: `printf abc`, wantOut: []byte("abc")},
		{name: "two trailing newlines", command: `printf 'abc\n\n'`, wantOut: []byte("abc\n\n")},
		{name: "empty", command: `:`, wantOut: []byte{}},
		{name: "nul and soh", command: `printf 'a\0b\001c\0'`, wantOut: []byte("a\x00b\x01c\x00")},
		{name: "all bytes", command: `printf "$(printf '\\%03o' {0..255})"`, wantOut: nil},
		{name: "all bytes via od-free awk", command: `awk 'BEGIN{for(i=0;i<256;i++) printf "%c", i}' | LC_ALL=C cat`, wantOut: nil},
		{name: "stderr separate", command: `printf out; printf err >&2; printf out2`, wantOut: []byte("outout2"), wantErr: []byte("err")},
		{name: "status", command: `printf x; (exit 3)`, wantOut: []byte("x"), wantStatus: 3},
		{name: "big stdout", command: `head -c 307200 /dev/zero | tr '\0' x`, wantOut: bytes.Repeat([]byte("x"), 307200)},
		{name: "big both", command: fmt.Sprintf(`for i in $(seq %d); do printf 0123456789abcdef; printf e >&2; done`, len(big)/16), wantOut: big, wantErr: bytes.Repeat([]byte("e"), len(big)/16)},
		{name: "carriage returns", command: `printf 'a\r\nb\r'`, wantOut: []byte("a\r\nb\r")},
		{name: "fake frame text", command: `printf '\nsandgate:00 0\n/\0\nsandgate:00:end\n'`, wantOut: []byte("\nsandgate:00 0\n/\x00\nsandgate:00:end\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := sessRun(t, s, tt.command)
			want := tt.wantOut
			if want == nil {
				want = all
			}
			if !bytes.Equal(r.Stdout, want) {
				t.Errorf("stdout = %q (len %d), want len %d", sessTrunc(r.Stdout), len(r.Stdout), len(want))
			}
			if !bytes.Equal(r.Stderr, tt.wantErr) && !(len(r.Stderr) == 0 && tt.wantErr == nil) {
				t.Errorf("stderr = %q, want %q", sessTrunc(r.Stderr), sessTrunc(tt.wantErr))
			}
			if r.ExitCode != tt.wantStatus || r.TimedOut || r.Truncated {
				t.Errorf("result = exit %d timedout %v truncated %v", r.ExitCode, r.TimedOut, r.Truncated)
			}
		})
	}
}

func sessTrunc(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:80:80], "..."...)
	}
	return b
}

func TestSessionTruncated(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	r := sessMustExec(t, s, SessionCommand{Command: `head -c 100000 /dev/zero; printf ok >&2`, OutputLimit: 1000})
	if len(r.Stdout) != 1000 || !r.Truncated || string(r.Stderr) != "ok" || r.ExitCode != 0 {
		t.Errorf("len %d truncated %v stderr %q exit %d", len(r.Stdout), r.Truncated, r.Stderr, r.ExitCode)
	}
	r = sessRun(t, s, `printf abc`)
	if r.Truncated || string(r.Stdout) != "abc" {
		t.Errorf("next command: %q truncated %v", r.Stdout, r.Truncated)
	}
}

// TestSessionFIFO proves that concurrent callers are served in arrival order: a first
// command holds the shell until all ten callers have queued, one after another, then
// each appends its number to a file.
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

// TestSessionFakeFrame writes fake frames to stdout, stderr and to bash's saved copy
// of the control fd (which the shell itself, running the command, can reach), then
// keeps running: only the real frame may complete the command.
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

func TestSessionRehydrate(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	sessRun(t, s, "mkdir -p a/b && cd a/b && export X='multi\nline' Y=2 && unset LANG")
	snap := s.Snapshot()
	if err := s.Close(sessTestCtx(t)); err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.Options.Snapshot = &snap
	s2 := sessNewTest(t, cfg2)
	r := sessRun(t, s2, `pwd; printf '%s|' "$X" "$Y" "${LANG-unset}"`)
	if want := cfg.Dir + "/a/b\nmulti\nline|2|unset|"; string(r.Stdout) != want {
		t.Errorf("rehydrated: %q, want %q", r.Stdout, want)
	}
	snap2 := s2.Snapshot()
	if snap2.Cwd != snap.Cwd || fmt.Sprint(snap2.Env) != fmt.Sprint(snap.Env) {
		t.Errorf("snapshot changed across rehydration:\n%v\n%v", snap, snap2)
	}
}

func TestSessionPerCall(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	sessRun(t, s, "mkdir -p sub other && export KEEP=k EXP=old && LOCAL=l")
	tests := []struct {
		name string
		cmd  SessionCommand
		want string
	}{
		{name: "cwd", cmd: SessionCommand{Command: "pwd", Cwd: "sub"}, want: cfg.Dir + "/sub\n"},
		{name: "absolute cwd", cmd: SessionCommand{Command: "pwd", Cwd: cfg.Dir + "/other"}, want: cfg.Dir + "/other\n"},
		{name: "cwd and a cd inside", cmd: SessionCommand{Command: "cd /; pwd", Cwd: "sub"}, want: "/\n"},
		{name: "env new", cmd: SessionCommand{Command: `echo "$NEW"; sh -c 'echo "$NEW"'`, Env: map[string]string{"NEW": "n e\nw"}}, want: "n e\nw\nn e\nw\n"},
		{name: "env over exported", cmd: SessionCommand{Command: `echo $EXP`, Env: map[string]string{"EXP": "tmp"}}, want: "tmp\n"},
		{name: "env over local", cmd: SessionCommand{Command: `sh -c 'echo $LOCAL'`, Env: map[string]string{"LOCAL": "x"}}, want: "x\n"},
	}
	for _, tt := range tests {
		r := sessMustExec(t, s, tt.cmd)
		if string(r.Stdout) != tt.want {
			t.Errorf("%s: %q, want %q (stderr %q)", tt.name, r.Stdout, tt.want, r.Stderr)
		}
		// Nothing of the call persists.
		r = sessRun(t, s, `pwd; echo "${NEW-unset} $EXP $LOCAL"; sh -c 'echo ${LOCAL-unexported}'`)
		if want := cfg.Dir + "\nunset old l\nunexported\n"; string(r.Stdout) != want {
			t.Errorf("%s: after: %q, want %q", tt.name, r.Stdout, want)
		}
	}
	if got := s.Snapshot(); got.Cwd != cfg.Dir || got.Env["EXP"] != "old" {
		t.Errorf("snapshot = %v %v", got.Cwd, got.Env["EXP"])
	}
	r := sessMustExec(t, s, SessionCommand{Command: "echo never", Cwd: "missing"})
	if r.ExitCode == 0 || len(r.Stdout) != 0 || !strings.Contains(string(r.Stderr), "missing") {
		t.Errorf("missing cwd: %+v %q", r, r.Stderr)
	}
	bad := []SessionCommand{
		{Command: "true", Cwd: "../out"},
		{Command: "true", Cwd: "/etc"},
	}
	for _, c := range bad {
		if _, err := s.Exec(sessTestCtx(t), c); !errors.Is(err, ErrEscapes) {
			t.Errorf("cwd %q: %v, want ErrEscapes", c.Cwd, err)
		}
	}
	invalid := []SessionCommand{
		{Command: "a\x00b"},
		{Command: "true", Env: map[string]string{"1X": "v"}},
		{Command: "true", Env: map[string]string{"A-B": "v"}},
		{Command: "true", Env: map[string]string{"X": "a\x00"}},
	}
	for _, c := range invalid {
		if _, err := s.Exec(sessTestCtx(t), c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q %v: %v, want ErrInvalid", c.Command, c.Env, err)
		}
	}
}

func TestSessionInfoAndClose(t *testing.T) {
	t.Parallel()
	s := sessNewTest(t, sessTestConfig(t))
	info := s.Info()
	if info.Status != SessionReady || info.Commands != 0 || info.LastCommandAt != nil || info.ID == "" || info.Cwd == "" {
		t.Errorf("fresh info = %+v", info)
	}
	sessRun(t, s, "true")
	info = s.Info()
	if info.Commands != 1 || info.LastCommandAt == nil || info.LastCommandAt.Before(info.CreatedAt) {
		t.Errorf("info after one command = %+v", info)
	}
	// Close while a command runs: it returns a dead-session error.
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "sleep 1000"})
		errc <- err
	}()
	sessWaitFor(t, "busy", func() bool { return s.Info().Status == SessionBusy })
	for range 2 {
		if err := s.Close(sessTestCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-errc; !errors.Is(err, ErrSessionDead) {
		t.Errorf("running exec after Close: %v", err)
	}
	if _, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "true"}); !errors.Is(err, ErrSessionDead) || !strings.Contains(err.Error(), "session closed") {
		t.Errorf("exec after Close: %v", err)
	}
	if s.Info().Status != SessionDead {
		t.Errorf("status after Close = %v", s.Info().Status)
	}
}

func TestSessionContextCanceledWhileQueued(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	sessRun(t, s, "mkfifo gate")
	first := make(chan error, 1)
	go func() {
		_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "read line < gate"})
		first <- err
	}()
	sessWaitFor(t, "busy", func() bool { return s.Info().Status == SessionBusy })
	ctx, cancel := context.WithCancel(sessTestCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, SessionCommand{Command: "touch ran"})
		errc <- err
	}()
	sessWaitFor(t, "queued", func() bool { return s.queued() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled exec: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "gate"), []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	sessRun(t, s, "true")
	if _, err := os.Stat(filepath.Join(cfg.Dir, "ran")); err == nil {
		t.Errorf("canceled command ran")
	}
}

func TestNewSessionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts SessionOptions
		want error
	}{
		{name: "escaping cwd", opts: SessionOptions{Cwd: "../x"}, want: ErrEscapes},
		{name: "missing cwd", opts: SessionOptions{Cwd: "nope"}, want: ErrFileNotFound},
		{name: "not bash", opts: SessionOptions{Shell: "zsh"}, want: ErrInvalid},
		{name: "bad env", opts: SessionOptions{Env: map[string]string{"A=B": "x"}}, want: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := sessTestConfig(t)
			cfg.Options = tt.opts
			s, err := newSession(sessTestCtx(t), cfg)
			if err == nil {
				_ = s.Close(context.Background())
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
