package nsinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// modes are the two ways a sandbox holds its ids: the host's (root without
// capabilities), or root of a user namespace of its own. Tests that must hold in both
// run once per mode.
var modes = []struct {
	name   string
	userns *IDRange
}{
	{"host ids", nil},
	{"userns", &DefaultIDRange},
}

// forModes runs f as a parallel subtest per mode, with cfg's UserNS set for it.
func forModes(t *testing.T, cfg Config, f func(t *testing.T, cfg Config)) {
	t.Helper()
	for _, m := range modes {
		cfg := cfg
		cfg.UserNS = m.userns
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, cfg)
		})
	}
}

// TestFirstPIDIsInner checks that pids cross the boundary both ways: the first process
// has a small pid inside, and HostPID is the same process seen from the host.
func TestFirstPIDIsInner(t *testing.T) {
	t.Parallel()
	forModes(t, Config{}, testFirstPIDIsInner)
}

func testFirstPIDIsInner(t *testing.T, cfg Config) {
	in := startInit(t, cfg)
	r := run(t, in, "", "sh", "-c", "echo $$")
	ch := r.child
	if got := strings.TrimSpace(r.stdout); got != fmt.Sprint(ch.PID()) {
		t.Fatalf("the process says its pid is %q, PID() = %d", got, ch.PID())
	}
	if ch.PID() <= 1 || ch.PID() > 64 || ch.PID() == ch.HostPID() || ch.HostPID() <= 0 {
		t.Fatalf("PID() = %d, HostPID() = %d: want a small inner pid and a different host pid", ch.PID(), ch.HostPID())
	}
}

// TestHostPIDNamesTheProcess checks HostPID against the kernel's NSpid line.
func TestHostPIDNamesTheProcess(t *testing.T) {
	t.Parallel()
	forModes(t, Config{}, testHostPIDNamesTheProcess)
}

func testHostPIDNamesTheProcess(t *testing.T, cfg Config) {
	in := startInit(t, cfg)
	ctx := testCtx(t)
	ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ch.HostPID()))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("NSpid:\t%d\t%d\n", ch.HostPID(), ch.PID())
	if !strings.Contains(string(status), want) {
		t.Fatalf("/proc/%d/status has no %q:\n%s", ch.HostPID(), want, status)
	}
	if err := ch.Signal(ctx, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st, err := ch.Wait(ctx); err != nil || st.Signal != unix.SIGKILL {
		t.Fatalf("Wait = %v, %v; want killed by SIGKILL", st, err)
	}
}

// TestIsolation runs the isolation cases of one sandbox, each a process inside, with
// the host's ids and in a user namespace.
func TestIsolation(t *testing.T) {
	t.Parallel()
	forModes(t, Config{ID: "sb-iso"}, testIsolation)
}

func testIsolation(t *testing.T, cfg Config) {
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Workspace = ws
	in := startInit(t, cfg)
	tests := []struct {
		name  string
		argv  []string
		check func(t *testing.T, r result)
	}{
		{"write to /etc fails", []string{"touch", "/etc/nsinit-probe"}, wantEROFS("/etc/nsinit-probe")},
		{"write to /usr fails", []string{"touch", "/usr/nsinit-probe"}, wantEROFS("/usr/nsinit-probe")},
		{"write to / fails", []string{"mkdir", "/nsinit-probe"}, wantEROFS("/nsinit-probe")},
		{"workspace is nosuid and nodev", []string{"grep", " /workspace ", "/proc/self/mountinfo"},
			func(t *testing.T, r result) {
				if !strings.Contains(r.stdout, " rw,nosuid,nodev") {
					t.Errorf("/workspace mount options: %q", r.stdout)
				}
			}},
		{"/proc/sys is read-only", []string{"grep", " /proc/sys ", "/proc/self/mountinfo"},
			func(t *testing.T, r result) {
				if !strings.Contains(r.stdout, " ro,") {
					t.Errorf("/proc/sys is not mounted read-only: %q", r.stdout)
				}
			}},
		{"workspace is writable and is the workspace", []string{"sh", "-c", "echo hi > f && pwd"},
			func(t *testing.T, r result) {
				b, err := os.ReadFile(filepath.Join(ws, "f"))
				if r.status.Code != 0 || strings.TrimSpace(r.stdout) != "/workspace" || string(b) != "hi\n" {
					t.Errorf("got %v %q %q; host file %q, %v", r.status, r.stdout, r.stderr, b, err)
				}
			}},
		{"host directories are invisible", []string{"sh", "-c", "cat " + filepath.Join(outside, "marker") + "; test -e " + ws + " && echo ws-visible; ls /tmp /home /root /work 2>&1"},
			func(t *testing.T, r result) {
				if strings.Contains(r.stdout, "host") || strings.Contains(r.stdout, "ws-visible") || r.status.Code == 0 {
					t.Errorf("host paths are visible: %q %q", r.stdout, r.stderr)
				}
			}},
		{"hostname is the id", []string{"cat", "/proc/sys/kernel/hostname"}, wantStdout("sb-iso\n")},
		{"only lo exists", []string{"sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}, wantStdout("lo\n")},
		{"lo is up", []string{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9"}, wantStderr("Connection refused")},
		{"no route out", []string{"bash", "-c", "exec 3<>/dev/tcp/1.1.1.1/80"}, wantStderr("Network is unreachable")},
		{"unshare is denied", []string{"unshare", "-m", "true"}, wantStderr("Operation not permitted")},
		{"keyctl is denied", perlSyscall(unix.SYS_KEYCTL, 0), wantStdout("1")},
		{"clone into a new user namespace is denied", perlSyscall(unix.SYS_CLONE, unix.CLONE_NEWUSER|int(unix.SIGCHLD)), wantStdout("1")},
		{"io_uring is denied", perlSyscall(unix.SYS_IO_URING_SETUP, 1), wantStdout("1")},
		{"clone3 is refused with ENOSYS", perlSyscall(unix.SYS_CLONE3, 0), wantStdout(fmt.Sprint(int(unix.ENOSYS)))},
		{"plain fork still works", []string{"sh", "-c", "(echo child) | cat"}, wantStdout("child\n")},
		{"no privileges", []string{"grep", "-E", "^(NoNewPrivs|CapBnd|CapEff|CapPrm|CapInh|Seccomp):", "/proc/self/status"},
			wantStdout("CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
				"CapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n")},
		{"only stdio is open", []string{"ls", "/proc/self/fd"}, wantStdout("0\n1\n2\n3\n")}, // 3: ls reading the directory
		{"root inside by default", []string{"id", "-u"}, wantStdout("0\n")},
		{"environment is only what was asked", []string{"env"}, wantStdout("PATH=" + DefaultPath + "\nHOME=/workspace\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, run(t, in, "", tt.argv...))
		})
	}
	// In a sandbox of its own: the cases above run in parallel and see each other.
	t.Run("ps shows only the sandbox", func(t *testing.T) {
		t.Parallel()
		own := cfg
		own.ID, own.Workspace = "sb-iso-ps", ""
		r := run(t, startInit(t, own), "", "sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done")
		comms := strings.Fields(r.stdout)
		for _, c := range comms {
			if c != "exe" && c != "sh" && c != "cat" {
				t.Errorf("a process %q that is not the sandbox's is visible: %q", c, comms)
			}
		}
		if len(comms) < 2 || len(comms) > 8 {
			t.Errorf("want the init and this shell, got %q", comms)
		}
	})
}

// perlSyscall makes a command that calls syscall nr(arg, 0, 0, 0, 0) and prints the
// errno it failed with, or "ok" (a child of a fork-like call exits at once).
func perlSyscall(nr int, arg int) []string {
	return []string{"perl", "-e", fmt.Sprintf(
		`my $r = syscall(%d, %d, 0, 0, 0, 0); if ($r == 0) { exit 0 } if ($r > 0) { waitpid($r, 0); print "ok"; exit } print $!+0`, nr, arg)}
}

func wantEROFS(hostPath string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.status.Code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
			t.Errorf("got %v, stderr %q; want EROFS", r.status, r.stderr)
		}
		if _, err := os.Lstat(hostPath); err == nil {
			t.Errorf("%s was created on the host", hostPath)
		}
	}
}

func wantStdout(want string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.stdout != want {
			t.Errorf("stdout = %q (stderr %q, %v), want %q", r.stdout, r.stderr, r.status, want)
		}
	}
}

func wantStderr(sub string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.status.Code == 0 || !strings.Contains(r.stderr, sub) {
			t.Errorf("got %v, stderr %q; want a failure with %q", r.status, r.stderr, sub)
		}
	}
}
