package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wscatPath returns the pinned wscat of tools/ (package.json and package-lock.json
// there); make test installs it with npm ci. Its absence fails the test: the WebSocket
// input rule is tested with the tool people use, not skipped.
func wscatPath(t testing.TB) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "tools", "node_modules", ".bin", "wscat"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("wscat is not installed (%v): run `make tools` (npm ci in tools/), as make test does", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): wscat needs it", err)
	}
	return bin
}

// wscatSession is a running wscat connected to a WebSocket URL, its stdin a pipe (not
// a terminal: it sends each line it reads as a text frame and prints each message it
// gets on a line of its own).
type wscatSession struct {
	t     testing.TB
	stdin io.WriteCloser
	lines chan string
	seen  strings.Builder
	done  chan error
}

func startWscat(t testing.TB, url string) *wscatSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, wscatPath(t), "--no-color", "-c", url, "-H", "Authorization: Bearer "+testToken)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &wscatSession{t: t, stdin: stdin, lines: make(chan string, 256), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close() // wscat closes the connection and exits at the end of its input
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			cancel()
			<-w.done
		}
		cancel()
		if t.Failed() {
			t.Logf("wscat stderr: %s", stderr.String())
		}
	})
	return w
}

// waitFor reads wscat's output until a line contains want.
func (w *wscatSession) waitFor(want string) string {
	w.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("wscat exited before printing %q; it printed:\n%s", want, w.seen.String())
			}
			w.seen.WriteString(line + "\n")
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			w.t.Fatalf("wscat printed no %q within 30s; it printed:\n%s", want, w.seen.String())
		}
	}
}

// typeLine sends one line to wscat, as a user typing it.
func (w *wscatSession) typeLine(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.stdin, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

// TestWscat drives a terminal with wscat itself: with ?input=line each typed line runs
// in the shell, and without it a typed line is answered with an error message that
// says how to type instead of being ignored.
func TestWscat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("wc")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/wc/terminals/t1", map[string]any{})
	base := "ws" + strings.TrimPrefix(ts.url, "http") + "/v1/sandboxes/wc/terminals/t1/ws"

	t.Run("line mode runs typed commands", func(t *testing.T) {
		w := startWscat(t, base+"?input=line")
		w.waitFor(`{"type":"ready"`)
		w.typeLine("echo typed-$((6*7))") // the shell's answer, not the echo of the line
		w.waitFor("typed-42")
		w.typeLine(`cd /tmp && echo "in:$(pwd)"`) // the line's own echo has no "in:/tmp"
		w.waitFor("in:/tmp")
	})
	t.Run("a typed line without it is answered", func(t *testing.T) {
		w := startWscat(t, base)
		w.waitFor(`{"type":"ready"`)
		w.typeLine("echo hi")
		line := w.waitFor(`{"type":"error"`)
		if !strings.Contains(line, "?input=line") {
			t.Fatalf("the error does not say how to type: %s", line)
		}
	})
}
