package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptyOutput collects what the CLI writes to its terminal.
type ptyOutput struct {
	mu   sync.Mutex
	b    bytes.Buffer
	done chan struct{}
}

// waitFor waits up to 60 s until the output holds want.
func (o *ptyOutput) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		o.mu.Lock()
		got := o.b.String()
		o.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal output %q lacks %q after 60s", got, want)
		}
	}
}

// TestCLIExecTTY runs `exec -it` on a real terminal (a PTY made by the test): the
// command gets a PTY of the terminal's size, the terminal is in raw mode while it
// runs and restored after, typed input reaches the command, and its exit code is
// the CLI's.
func TestCLIExecTTY(t *testing.T) {
	n := startNode(t, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"tty1"}`)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 101}); err != nil {
		t.Fatal(err)
	}
	fd := int(tty.Fd())
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := n.command(t, cliToken, "", "exec", "-it", "tty1", "--", "sh", "-c", `stty size; printf 'ready\n'; read x; echo "got:$x"; exit 3`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &ptyOutput{done: make(chan struct{})}
	go func() {
		defer close(out.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			out.mu.Lock()
			out.b.Write(buf[:n])
			out.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // harmless when it already exited
		<-exited
		ptmx.Close()
		<-out.done
	})

	out.waitFor(t, "33 101")
	out.waitFor(t, "ready")
	raw, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Lflag&(unix.ICANON|unix.ECHO) != 0 {
		t.Errorf("terminal not in raw mode while exec -it runs: lflag %#x", raw.Lflag)
	}
	if _, err := ptmx.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got:hello")
	select {
	case <-exited:
		if code := exitCode(t, waitErr); code != 3 {
			t.Fatalf("exit code %d, want 3", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("exec -it did not exit within 60s")
	}
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal mode not restored: before %+v after %+v", before, after)
	}
}
