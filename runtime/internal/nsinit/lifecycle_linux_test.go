package nsinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKillAllInside runs kill -9 -1 inside (safe: startInit checked the pid namespace)
// and checks that it ended the sandbox's other processes only: this test process and
// the init live on, and the init still spawns.
func TestKillAllInside(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	victim, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, in, "", "sh", "-c", "kill -9 -1; echo survived")
	if r.stdout != "survived\n" {
		t.Fatalf("the killing shell: %q %q %v", r.stdout, r.stderr, r.status)
	}
	if st, err := victim.Wait(ctx); err != nil || st.Signal != unix.SIGKILL {
		t.Fatalf("the sandbox's sleep: %v, %v; want killed by kill -9 -1", st, err)
	}
	if err := unix.Kill(in.PID(), 0); err != nil {
		t.Fatalf("the init died: %v", err)
	}
	if r := run(t, in, "", "echo", "still"); r.stdout != "still\n" {
		t.Fatalf("the init no longer spawns: %q %q", r.stdout, r.stderr)
	}
}

// TestCloseKillsDaemons checks that Close ends a setsid daemon, which left the
// process group of what was spawned, with everything else in the sandbox.
func TestCloseKillsDaemons(t *testing.T) {
	t.Parallel()
	in, err := Start(testCtx(t), Config{ID: "sb-daemon", Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	requireNamespaces(t, in.PID())
	ns := nsOf(t, in.PID())
	// The shell waits until the daemon leads its own session: its group is killed
	// when the shell exits, and the setsid must have happened by then.
	r := run(t, in, "", "sh", "-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & d=$!
while read -r _ _ _ _ _ sid _ </proc/$d/stat && [ "$sid" != "$d" ]; do :; done; echo $d`)
	if r.status.Code != 0 {
		t.Fatalf("%v %q", r.status, r.stderr)
	}
	if n := len(livePIDsIn(ns)); n != 2 {
		t.Fatalf("want the init and the daemon alive before Close, got %d processes", n)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoneIn(t, ns)
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := in.Spawn(testCtx(t), SpawnRequest{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Spawn after Close = %v, want ErrClosed", err)
	}
}

// TestClientKilled SIGKILLs a client process (a helper run of this binary) that holds
// an init with a daemon inside, and checks that nothing of the sandbox survives; in a
// user namespace too, where Pdeathsig must survive the init's change of credentials.
func TestClientKilled(t *testing.T) {
	t.Parallel()
	for _, userNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("userns=%v", userNS), func(t *testing.T) {
			t.Parallel()
			testClientKilled(t, userNS)
		})
	}
}

func testClientKilled(t *testing.T, userNS bool) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=client", "NSINIT_WS="+t.TempDir())
	if userNS {
		cmd.Env = append(cmd.Env, "NSINIT_USERNS=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 {
		t.Fatalf("helper said %q, %v", line, err)
	}
	initPID, _ := strconv.Atoi(f[0])
	ns := f[1]
	requireNamespaces(t, initPID)
	if ours, theirs := nsOfKind(t, os.Getpid(), "user"), nsOfKind(t, initPID, "user"); userNS && ours == theirs {
		t.Fatalf("the init has no user namespace of its own (%s)", theirs)
	}
	ctx := testCtx(t)
	for len(livePIDsIn(ns)) < 4 { // the init, sh, its sleep and the setsid sleep
		if ctx.Err() != nil {
			t.Fatalf("the sandbox's processes never all started: %v", livePIDsIn(ns))
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10e6}, nil)
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoneIn(t, ns)
}

// TestSIGTERM checks that the init, as pid 1, handles SIGTERM from the host itself:
// everything inside ends and it exits 128+15 (a Go pid 1 left to the default would
// exit 2 and leave the ending to the kernel).
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	in, err := Start(testCtx(t), Config{ID: "sb-term", Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	requireNamespaces(t, in.PID())
	ns := nsOf(t, in.PID())
	ctx := testCtx(t)
	ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Err(); err != nil {
		t.Fatalf("Err of a running init = %v", err)
	}
	if err := unix.Kill(in.PID(), unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Wait(ctx); !errors.Is(err, ErrInitExited) {
		t.Fatalf("Wait = %v, want ErrInitExited", err)
	}
	select {
	case <-in.Done():
	case <-ctx.Done():
		t.Fatal("Done was not closed when the init exited")
	}
	if err := in.Err(); !errors.Is(err, ErrInitExited) {
		t.Fatalf("Err = %v, want ErrInitExited", err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if code := in.cmd.ProcessState.ExitCode(); code != 128+int(unix.SIGTERM) {
		t.Fatalf("the init exited %d, want %d", code, 128+int(unix.SIGTERM))
	}
	waitNoneIn(t, ns)
}

// TestOrphansReaped checks that the init, as pid 1, reaps processes orphaned inside:
// none is left a zombie.
func TestOrphansReaped(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	r := run(t, in, "", "sh", "-c", "for i in 1 2 3 4 5; do sh -c 'exit 0' & done; exit 0")
	if r.status.Code != 0 {
		t.Fatalf("%v %q", r.status, r.stderr)
	}
	// Each later spawn lists the states inside; the orphans must be gone, not zombies.
	ctx := testCtx(t)
	for {
		r := run(t, in, "", "sh", "-c", "cat /proc/[0-9]*/stat | cut -d' ' -f3 | grep -c Z")
		if strings.TrimSpace(r.stdout) == "0" {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("zombies stay inside: %q", r.stdout)
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10e6}, nil)
	}
}

// TestExitStatus: the exit frame carries the status as waitid shows it before the
// process is reaped: an exit code, or the signal that killed it.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	for _, tt := range []struct {
		name string
		cmd  string
		want ExitStatus
	}{
		{"zero", "exit 0", ExitStatus{}},
		{"code", "exit 3", ExitStatus{Code: 3}},
		{"high code", "exit 255", ExitStatus{Code: 255}},
		{"terminated", "kill -TERM $$", ExitStatus{Code: -1, Signal: unix.SIGTERM}},
		{"killed", "kill -KILL $$", ExitStatus{Code: -1, Signal: unix.SIGKILL}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, in, "", "/bin/sh", "-c", tt.cmd).status; got != tt.want {
				t.Errorf("status %+v, want %+v", got, tt.want)
			}
		})
	}
}
