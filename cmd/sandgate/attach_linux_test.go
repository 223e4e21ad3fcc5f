package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair; the caller closes both.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pts: %v", err)
	}
	return m, s
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAttachTTY attaches with a real PTY as stdin: raw mode, the initial size and a
// SIGWINCH resize reach the server, Ctrl-] detaches, and the terminal's mode is
// restored. It sends SIGWINCH to the test process, so it is not parallel.
func TestAttachTTY(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	sfd := int(slave.Fd())
	if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Col: 100, Row: 30}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}

	g := &fakeGateway{}
	srv := httptest.NewServer(g.handler())
	defer srv.Close()
	var out, errb strings.Builder
	e := &env{stdin: slave, stdout: &out, stderr: &errb,
		getenv: func(k string) string { return map[string]string{"SANDGATE_ADDR": srv.URL}[k] }}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- dispatch(ctx, e, []string{"attach", "sb1", "main"}) }()

	got := func(msg string) func() bool {
		return func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, m := range g.ws {
				if m == msg {
					return true
				}
			}
			return false
		}
	}
	waitFor(t, "the initial resize", got(`{"type":"resize","cols":100,"rows":30}`))
	raw, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Lflag&unix.ICANON != 0 || raw.Lflag&unix.ECHO != 0 {
		t.Errorf("terminal not in raw mode: lflag %#x", raw.Lflag)
	}
	if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Col: 120, Row: 40}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the SIGWINCH resize", func() bool {
		syscall.Kill(os.Getpid(), syscall.SIGWINCH)
		time.Sleep(20 * time.Millisecond)
		return got(`{"type":"resize","cols":120,"rows":40}`)()
	})
	if _, err := master.Write([]byte("pwd\r\x1d")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "[detached from sb1/main]") {
			t.Fatalf("code %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not return after Ctrl-]")
	}
	if !got("pwd\r")() {
		t.Errorf("server did not get the input; got %q", g.ws)
	}
	after, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal mode not restored: before %+v after %+v", before, after)
	}
}
