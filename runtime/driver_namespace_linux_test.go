package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// newNSSandbox makes a sandbox on the namespace driver and checks that its processes
// really run in pid and mount namespaces of their own: the isolation tests are only
// safe and meaningful then.
func newNSSandbox(tb testing.TB, cfg *Config) *Sandbox {
	tb.Helper()
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if _, ok := c.Driver.(NamespaceDriver); !ok {
		c.Driver = NamespaceDriver{}
	}
	s := newTestSandbox(tb, &c)
	h, ok := s.h.(*nsHost)
	if !ok {
		tb.Fatalf("driver host %T, want the namespace driver's", s.h)
	}
	for _, ns := range []string{"pid", "mnt"} {
		ours, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(h.in.PID()) + "/ns/" + ns)
		if err1 != nil || err2 != nil || ours == theirs {
			tb.Fatalf("the sandbox has no %s namespace of its own (%q vs %q: %v %v)", ns, ours, theirs, err1, err2)
		}
	}
	return s
}

func TestNamespaceExec(t *testing.T) {
	t.Parallel()
	s := newNSSandbox(t, nil)
	ctx := testCtx(t)
	if err := os.Mkdir(filepath.Join(s.Dir(), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    ExecOptions
		want string
		code int
	}{
		{"pwd is the guest workspace", ExecOptions{Command: "pwd; echo $HOME"}, "/workspace\n/workspace\n", 0},
		{"relative cwd", ExecOptions{Command: "pwd", Cwd: "sub"}, "/workspace/sub\n", 0},
		{"guest absolute cwd", ExecOptions{Command: "pwd", Cwd: "/workspace/sub"}, "/workspace/sub\n", 0},
		{"server path cwd is mapped", ExecOptions{Command: "pwd", Cwd: filepath.Join(s.Dir(), "sub")}, "/workspace/sub\n", 0},
		{"stdin", ExecOptions{Argv: []string{"cat"}, Stdin: []byte("in\n")}, "in\n", 0},
		{"exit code", ExecOptions{Command: "exit 7"}, "", 7},
		{"killed by a signal", ExecOptions{Command: "kill -9 $$"}, "", 137},
		{"not found", ExecOptions{Argv: []string{"no-such-program"}}, "", 127},
		{"only the sandbox's processes", ExecOptions{Command: "n=$(ls /proc | grep -c '^[0-9]'); [ $n -le 5 ] && echo few"}, "few\n", 0}, // init, sh, its subshell, ls, grep
		{"hostname is the id", ExecOptions{Command: "hostname"}, s.cfg.ID + "\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.Exec(ctx, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != c.code || (c.want != "" && string(r.Stdout) != c.want) {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q", r.ExitCode, r.Stdout, r.Stderr, c.code, c.want)
			}
		})
	}
}

func TestNamespaceProcessAndSession(t *testing.T) {
	t.Parallel()
	for _, userNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("userns=%v", userNS), func(t *testing.T) {
			t.Parallel()
			testNamespaceProcessAndSession(t, NamespaceDriver{UserNS: userNS})
		})
	}
}

func testNamespaceProcessAndSession(t *testing.T, d NamespaceDriver) {
	s := newNSSandbox(t, &Config{Driver: d})
	ctx := testCtx(t)
	r, err := s.Exec(ctx, ExecOptions{Command: "id -u"})
	if err != nil || string(r.Stdout) != "0\n" {
		t.Fatalf("id -u inside: %q %v, want 0", r.Stdout, err)
	}
	sleeper, err := s.Start(ctx, StartOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(hostPID(t, s, sleeper.Info().PID)) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	wantUID := "0"
	if d.UserNS {
		wantUID = "100000"
	}
	if !strings.Contains(string(status), "\nUid:\t"+wantUID+"\t") {
		t.Errorf("outside, the process's ids are not %s:\n%s", wantUID, status)
	}
	p, err := s.Start(ctx, StartOptions{Command: "echo $$; tty; exec cat", PTY: &WinSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Info().Cwd != "/workspace" {
		t.Errorf("process cwd %q, want /workspace", p.Info().Cwd)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	out := waitOutput(t, ctx, sub, "\n")
	if got, _ := strconv.Atoi(strings.TrimSpace(strings.Split(out, "\n")[0])); got != p.Info().PID {
		t.Errorf("the process says its pid is %q, the API %d", out, p.Info().PID)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}

	sess, err := s.NewSession(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	for _, cmd := range []string{"mkdir -p d && cd d && export X=1", "pwd; echo $X; echo err >&2"} {
		r, err := sess.Exec(ctx, SessionCommand{Command: cmd})
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("%q: %+v %v", cmd, r, err)
		}
		if cmd[0] == 'p' && (string(r.Stdout) != "/workspace/d\n1\n" || string(r.Stderr) != "err\n") {
			t.Fatalf("session: stdout %q stderr %q", r.Stdout, r.Stderr)
		}
	}
	if snap := sess.Snapshot(); snap.Cwd != "/workspace/d" {
		t.Errorf("snapshot cwd %q, want /workspace/d", snap.Cwd)
	}
}

// TestNamespaceAdoptsHostPaths: paths saved while the sandbox ran on the local driver
// (a session's cwd, a process's cwd: server paths in the workspace) still work on the
// namespace driver, as the same places under /workspace.
func TestNamespaceAdoptsHostPaths(t *testing.T) {
	t.Parallel()
	s := newNSSandbox(t, &Config{Driver: NamespaceDriver{UserNS: true}})
	ctx := testCtx(t)
	sub := filepath.Join(s.Dir(), "old", "cwd")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sess, err := s.NewSession(ctx, SessionOptions{Snapshot: &SessionSnapshot{Cwd: sub, Env: map[string]string{"KEPT": "yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	r, err := sess.Exec(ctx, SessionCommand{Command: "pwd; echo $KEPT; touch made-inside"})
	if err != nil || string(r.Stdout) != "/workspace/old/cwd\nyes\n" {
		t.Fatalf("resumed session: %q %q %v", r.Stdout, r.Stderr, err)
	}
	p, err := s.Start(ctx, StartOptions{Command: "pwd", Cwd: sub})
	if err != nil {
		t.Fatal(err)
	}
	if p.Info().Cwd != "/workspace/old/cwd" {
		t.Errorf("process cwd %q, want /workspace/old/cwd", p.Info().Cwd)
	}
	// A file made inside is the server's user's on disk (the workspace is idmapped).
	fi, err := os.Stat(filepath.Join(sub, "made-inside"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() {
		t.Errorf("a file made inside belongs to uid %d on disk, want %d", st.Uid, os.Getuid())
	}
}
