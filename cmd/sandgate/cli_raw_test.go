package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// counter is a shell loop that prints "<word> 1", "<word> 2", ... until it is killed.
func counter(word string) string {
	return fmt.Sprintf(`i=0; while :; do i=$((i+1)); echo "%s $i"; sleep 0.02; done`, word)
}

// isCount reports whether out is exactly what counter(word) prints, cut anywhere,
// with eol ending each line (the line ending of a PTY is "\r\n").
func isCount(out, word, eol string) (lines int, ok bool) {
	for i := 1; len(out) > 0; i++ {
		line := fmt.Sprintf("%s %d%s", word, i, eol)
		if !strings.HasPrefix(line, out) && !strings.HasPrefix(out, line) {
			return i - 1, false
		}
		if len(out) < len(line) {
			return i - 1, true
		}
		out, lines = out[len(line):], i
	}
	return lines, true
}

// rawCLI is a CLI process whose stdout the test keeps byte for byte.
type rawCLI struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	out    bytes.Buffer
	wrote  chan struct{} // signalled (without blocking) after each write to out
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited; code is set then
	code   int
}

func (r *rawCLI) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out.Write(p)
	r.mu.Unlock()
	select {
	case r.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (r *rawCLI) stdout() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// startRaw starts the built CLI with SANDGATE_ADDR=addr. It is killed at the end of
// the test if it still runs.
func startRaw(t *testing.T, name, addr, token string, args ...string) *rawCLI {
	t.Helper()
	r := &rawCLI{name: name, wrote: make(chan struct{}, 1), stderr: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = (&node{}).command(t, token, "http://"+addr, args...)
	r.cmd.Stdout, r.cmd.Stderr = r, r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.code = exitCode(t, r.cmd.Wait())
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill() // harmless when it already exited
		<-r.done
	})
	return r
}

// waitOut waits until cond holds for stdout, up to movePatience.
func (r *rawCLI) waitOut(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	if !r.waitOutFor(t, what, movePatience, cond) {
		t.Fatalf("%s: no %s within %v; stdout %q, stderr %q", r.name, what, movePatience, r.stdout(), r.stderr.String())
	}
}

// waitOutFor waits until cond holds for stdout, up to d, and reports whether it did.
func (r *rawCLI) waitOutFor(t *testing.T, what string, d time.Duration, cond func(string) bool) bool {
	t.Helper()
	deadline := time.After(d)
	for !cond(r.stdout()) {
		select {
		case <-r.wrote:
		case <-r.done:
			if !cond(r.stdout()) {
				t.Fatalf("%s exited (%d) before %s; stdout %q, stderr %q", r.name, r.code, what, r.stdout(), r.stderr.String())
			}
		case <-deadline:
			return false
		}
	}
	return true
}

// typeInNewShell types line into an attach whose terminal just got a new shell, until
// want shows: a shell may drop what was typed before it set its terminal up, and
// nothing tells the client when that is done.
func (r *rawCLI) typeInNewShell(t *testing.T, line, want string) {
	t.Helper()
	for range 10 {
		if _, err := io.WriteString(r.stdin, line); err != nil {
			t.Fatal(err)
		}
		if r.waitOutFor(t, want, 10*time.Second, func(s string) bool { return strings.Contains(s, want) }) {
			return
		}
	}
	t.Fatalf("%s: no %s after typing %q ten times; stdout %q, stderr %q", r.name, want, line, r.stdout(), r.stderr.String())
}

// wait waits for the process to exit and returns its exit code.
func (r *rawCLI) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(movePatience):
		t.Fatalf("%s did not exit within %v; stdout %q, stderr %q", r.name, movePatience, r.stdout(), r.stderr.String())
		return 0
	}
}
