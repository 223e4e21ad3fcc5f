package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{name: "stdin is empty", command: `cat; read -r x || printf eof`, wantOut: []byte("eof")},
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
// TestSessionFakeFrame writes fake frames to stdout, stderr and to bash's saved copy
// of the control fd (which the shell itself, running the command, can reach), then
// keeps running: only the real frame may complete the command.
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

// TestSessionPerCallCwdGone: a per-call cwd removed after Exec checked it fails in the
// shell with a plain message, not bash's error from inside the session's helpers.
func TestSessionPerCallCwdGone(t *testing.T) {
	t.Parallel()
	cfg := sessTestConfig(t)
	s := sessNewTest(t, cfg)
	// Queued as Exec would, with the cwd already resolved, so the check is skipped.
	req := &sessReq{cmd: SessionCommand{Command: "echo never"}, cwd: filepath.Join(cfg.Dir, "gone"), done: make(chan sessResult, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, req)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a kick is pending already
	}
	r := <-req.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := "sandgate: cannot change to cwd " + filepath.Join(cfg.Dir, "gone") + "\n"
	if r.res.ExitCode != 1 || len(r.res.Stdout) != 0 || string(r.res.Stderr) != want {
		t.Errorf("result %d %q %q, want 1, no output and %q", r.res.ExitCode, r.res.Stdout, r.res.Stderr, want)
	}
	if r := sessRun(t, s, "pwd"); string(r.Stdout) != cfg.Dir+"\n" {
		t.Errorf("after: %q", r.Stdout)
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
	if err := os.WriteFile(filepath.Join(cfg.Dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A cwd that is not a directory is rejected before the shell sees the command: no
	// wrapper error leaks, nothing runs, and the session goes on.
	for _, c := range []struct{ cwd, want string }{
		{"missing", `cwd "missing" does not exist`},
		{"file", `cwd "file" is not a directory`},
	} {
		_, err := s.Exec(sessTestCtx(t), SessionCommand{Command: "touch ran", Cwd: c.cwd})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cwd %q: %v, want ErrInvalid saying %s", c.cwd, err, c.want)
		}
	}
	if r := sessRun(t, s, "pwd; ls ran 2>/dev/null"); string(r.Stdout) != cfg.Dir+"\n" {
		t.Errorf("after rejected cwds: %q", r.Stdout)
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
		{name: "missing cwd", opts: SessionOptions{Cwd: "nope"}, want: ErrInvalid},
		{name: "cwd is a file", opts: SessionOptions{Cwd: "file"}, want: ErrInvalid},
		{name: "not bash", opts: SessionOptions{Shell: "zsh"}, want: ErrInvalid},
		{name: "bad env", opts: SessionOptions{Env: map[string]string{"A=B": "x"}}, want: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := sessTestConfig(t)
			cfg.Options = tt.opts
			if err := os.WriteFile(filepath.Join(cfg.Dir, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
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
