package nsinit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPipes checks stdio through pipes, exit codes and signals.
func TestPipes(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	tests := []struct {
		name             string
		stdin            string
		argv             []string
		wantOut, wantErr string
		wantCode         int
		session          bool
	}{
		{"stdin to stdout", "hello\n", []string{"cat"}, "hello\n", "", 0, false},
		{"stderr apart", "", []string{"sh", "-c", "echo out; echo err >&2"}, "out\n", "err\n", 0, false},
		{"exit code", "", []string{"sh", "-c", "exit 7"}, "", "", 7, false},
		{"own process group", "", []string{"sh", "-c", "test $(ps -o pgid= -p $$) -eq $$ && echo leader"}, "leader\n", "", 0, false},
		{"own session", "", []string{"sh", "-c", "test $(ps -o sid= -p $$) -eq $$ && echo leader"}, "leader\n", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runReq(t, in, tt.stdin, SpawnRequest{Argv: tt.argv, Session: tt.session})
			if r.stdout != tt.wantOut || r.stderr != tt.wantErr || r.status.Code != tt.wantCode {
				t.Errorf("got %q %q %v, want %q %q %d", r.stdout, r.stderr, r.status, tt.wantOut, tt.wantErr, tt.wantCode)
			}
		})
	}
	t.Run("signal the group", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		// The shell and its sleep share the group; SIGTERM reaches both.
		or, ow := mustPipe(t)
		ch, err := in.Spawn(ctx, SpawnRequest{Argv: []string{"sh", "-c", "sleep 1000 & echo up; wait"}, Stdout: ow})
		_ = ow.Close()
		if err != nil {
			_ = or.Close()
			t.Fatal(err)
		}
		buf := make([]byte, 3)
		_ = or.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := io.ReadFull(or, buf); err != nil || string(buf) != "up\n" {
			_ = or.Close()
			t.Fatalf("read %q, %v", buf, err)
		}
		out := readAll(or)
		if err := ch.Signal(ctx, unix.SIGTERM); err != nil {
			t.Fatal(err)
		}
		st, err := ch.Wait(ctx)
		if err != nil || st.Signal != unix.SIGTERM || st.Code != -1 {
			t.Fatalf("Wait = %v, %v; want killed by SIGTERM", st, err)
		}
		// EOF on stdout means the sleep, which held it too, is gone.
		<-out
		if err := ch.Signal(ctx, unix.SIGTERM); !errors.Is(err, ErrExited) {
			t.Fatalf("Signal after exit = %v, want ErrExited", err)
		}
	})
}

// TestPTY runs processes on a PTY slave passed into the sandbox.
func TestPTY(t *testing.T) {
	t.Parallel()
	in := startInit(t, Config{})
	ctx := testCtx(t)
	t.Run("echo and exit code", func(t *testing.T) {
		m, s := openPTY(t)
		ch, err := in.Spawn(ctx, SpawnRequest{TTY: s, Argv: []string{"sh", "-c",
			"exec 3</dev/tty && echo ctty-ok; read x; echo got-$x; exit 3"}})
		_ = s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Write([]byte("abc\n")); err != nil {
			t.Fatal(err)
		}
		out := readUntil(t, m, "got-abc")
		if !strings.Contains(out, "ctty-ok") {
			t.Fatalf("the PTY is not the controlling terminal: %q", out)
		}
		if st, err := ch.Wait(ctx); err != nil || st.Code != 3 {
			t.Fatalf("Wait = %v, %v; want exit status 3", st, err)
		}
	})
	t.Run("signal", func(t *testing.T) {
		m, s := openPTY(t)
		ch, err := in.Spawn(ctx, SpawnRequest{TTY: s, Argv: []string{"sh", "-c", "echo ready; exec sleep 1000"}})
		_ = s.Close()
		if err != nil {
			t.Fatal(err)
		}
		readUntil(t, m, "ready")
		if err := ch.Signal(ctx, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if st, err := ch.Wait(ctx); err != nil || st.Signal != unix.SIGKILL {
			t.Fatalf("Wait = %v, %v; want killed by SIGKILL", st, err)
		}
	})
}

// openPTY opens a PTY pair on the host: a pollable master and the slave.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	m := os.NewFile(uintptr(mfd), "/dev/ptmx") // non-blocking: on the poller
	t.Cleanup(func() { _ = m.Close() })
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// readUntil reads m until it has seen want, bounded by testTimeout.
func readUntil(t *testing.T, m *os.File, want string) string {
	t.Helper()
	_ = m.SetReadDeadline(time.Now().Add(testTimeout))
	var out bytes.Buffer
	buf := make([]byte, 256)
	for !strings.Contains(out.String(), want) {
		n, err := m.Read(buf)
		out.Write(buf[:n])
		if err != nil && !errors.Is(err, syscall.EINTR) {
			t.Fatalf("read the PTY: %v (got %q)", err, out.String())
		}
	}
	return out.String()
}
