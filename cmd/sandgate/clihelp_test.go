package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cliRun describes one run of the built CLI for the end-to-end tests.
type cliRun struct {
	args  []string
	stdin string
	addr  string // overrides the node's address ("" : the node's)
}

// run runs the built CLI against n with stdin and returns its stdout, stderr and exit
// code.
func (n *node) run(tb testing.TB, token string, r cliRun) (string, string, int) {
	tb.Helper()
	cmd := n.command(tb, token, r.addr, r.args...)
	cmd.Stdin = strings.NewReader(r.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return stdout.String(), stderr.String(), exitCode(tb, err)
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		tb.Fatalf("sandgate %v did not end within 90s; stdout %q stderr %q", r.args, stdout.String(), stderr.String())
		return "", "", 0
	}
}

// command is the built CLI, set up to talk to n (or addr) with token.
func (n *node) command(tb testing.TB, token, addr string, args ...string) *exec.Cmd {
	tb.Helper()
	if addr == "" {
		addr = "http://" + n.addr
	}
	cmd := exec.Command(buildBinary(tb), args...)
	cmd.Env = append(os.Environ(), "SANDGATE_ADDR="+addr, "SANDGATE_TOKEN="+token)
	return cmd
}

func exitCode(tb testing.TB, err error) int {
	tb.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		tb.Fatalf("sandgate: %v", err)
	}
	return ee.ExitCode()
}

// liveCLI is a CLI process a test talks to while it runs.
type liveCLI struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line, read by a goroutine
	stderr *syncBuffer
	done   chan error
}

// start starts the built CLI against n with pipes for its stdin and stdout. The
// process is killed at the end of the test if it still runs.
func (n *node) start(tb testing.TB, token string, args ...string) *liveCLI {
	tb.Helper()
	cmd := n.command(tb, token, "", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	l := &liveCLI{cmd: cmd, stdin: stdin, stderr: &syncBuffer{}, lines: make(chan string, 64), done: make(chan error, 1)}
	cmd.Stderr = l.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
		l.done <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill() // harmless when it already exited
		for range l.lines {    // until the reader goroutine is done
		}
	})
	return l
}

// line returns the next line of stdout, waiting up to 60 s.
func (l *liveCLI) line(tb testing.TB) string {
	tb.Helper()
	select {
	case s, ok := <-l.lines:
		if !ok {
			tb.Fatalf("sandgate ended before printing a line; stderr %q", l.stderr.String())
		}
		return s
	case <-time.After(60 * time.Second):
		tb.Fatalf("no line from sandgate within 60s; stderr %q", l.stderr.String())
		return ""
	}
}

// wait waits up to 90 s for the CLI to exit, and returns the rest of its stdout and
// its exit code.
func (l *liveCLI) wait(tb testing.TB) (rest []string, code int) {
	tb.Helper()
	deadline := time.After(90 * time.Second)
	for {
		select {
		case s, ok := <-l.lines:
			if ok {
				rest = append(rest, s)
				continue
			}
			return rest, exitCode(tb, <-l.done)
		case <-deadline:
			tb.Fatalf("sandgate did not exit within 90s; stderr %q", l.stderr.String())
		}
	}
}

// interrupt sends SIGINT to the CLI.
func (l *liveCLI) interrupt(tb testing.TB) {
	tb.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		tb.Fatal(err)
	}
}

// restart stops n (SIGTERM: running processes end, streams close) and starts it
// again on the same address and data directory.
func (n *node) restart(t *testing.T, token, data string) *node {
	t.Helper()
	n.signal(t, syscall.SIGTERM)
	if code := waitExit(t, n); code != 0 {
		t.Fatalf("serve exited with %d: %s", code, n.log.String())
	}
	return startNodeAt(t, n.addr, data, token)
}
