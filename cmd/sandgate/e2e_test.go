package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// buildBinary returns the sandgate binary, built once per test binary (shared with
// the cluster harness, whose Cleanup removes it at the end: see TestMain).
func buildBinary(tb testing.TB) string {
	tb.Helper()
	return clustertest.Binary(tb)
}

// node is a `sandgate serve` subprocess.
type node struct {
	cmd  *exec.Cmd
	addr string
	log  *syncBuffer // serve's stderr: its log
}

// syncBuffer is a bytes.Buffer that a test may read while a process writes its output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// freeAddr returns a loopback address reserved for a serve process until tb ends.
func freeAddr(tb testing.TB) string { return clustertest.FreeAddr(tb) }

// startNode starts `sandgate serve` with token and the extra flags.
func startNode(tb testing.TB, token string, extra ...string) *node {
	tb.Helper()
	return startNodeAt(tb, freeAddr(tb), tb.TempDir(), token, extra...)
}

// startNodeAt starts `sandgate serve` on addr with data directory data, so that a
// test can restart a node where it was.
func startNodeAt(tb testing.TB, addr, data, token string, extra ...string) *node {
	tb.Helper()
	args := append([]string{"--listen", addr, "--data", data, "--token", token, "--node-id", "e2e", "--raft-listen", "127.0.0.1:0"}, extra...)
	n := launchServe(tb, args...)
	if n.addr != addr {
		tb.Fatalf("serve listens on %q, want %s: %s", n.addr, addr, n.log.String())
	}
	return n
}

// launchServe starts `sandgate serve` with args (stopped at cleanup) and returns it
// once it logs where it listens, which becomes its addr.
func launchServe(tb testing.TB, args ...string) *node {
	tb.Helper()
	return launchServeBin(tb, buildBinary(tb), args...)
}

// launchServeBin is launchServe of the sandgate binary bin.
func launchServeBin(tb testing.TB, bin string, args ...string) *node {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "SANDGATE_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	n := &node{cmd: cmd, log: logs}
	tb.Cleanup(func() {
		if tb.Failed() { // the server's side of what went wrong (internal errors are logged there)
			tb.Logf("serve's log:\n%s", logs.String())
		}
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening on http://") {
				ready <- sc.Text()
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if !ok {
			tb.Fatalf("serve did not start: %s", logs.String())
		}
		n.addr = strings.TrimPrefix(line, "listening on http://")
	case <-time.After(30 * time.Second):
		tb.Fatalf("serve did not log its address within 30s: %s", logs.String())
	}
	return n
}

// cli runs a client subcommand against n and returns its stdout, stderr and exit code.
func (n *node) cli(tb testing.TB, token string, args ...string) (string, string, int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(tb), args...)
	cmd.Env = append(os.Environ(), "SANDGATE_ADDR=http://"+n.addr, "SANDGATE_TOKEN="+token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			tb.Fatalf("sandgate %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

func (n *node) post(tb testing.TB, token, path, body string) string {
	tb.Helper()
	req, _ := http.NewRequest("POST", "http://"+n.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

func TestServeAndCLI(t *testing.T) {
	const tok = "e2e-token"
	n := startNode(t, tok)
	n.post(t, tok, "/v1/sandboxes", `{"id":"cli1"}`)

	out, errOut, code := n.cli(t, tok, "exec", "cli1", "--", "sh", "-c", "echo out; echo err >&2; exit 5")
	if out != "out\n" || errOut != "err\n" || code != 5 {
		t.Fatalf("exec: %q %q %d", out, errOut, code)
	}
	out, _, code = n.cli(t, tok, "sandboxes")
	if code != 0 || !strings.Contains(out, "cli1") {
		t.Fatalf("sandboxes: %d %q", code, out)
	}
	proc := n.post(t, tok, "/v1/sandboxes/cli1/processes", `{"command":"echo line1; echo line2"}`)
	id := proc[strings.Index(proc, `"id":"`)+6:]
	id = id[:strings.IndexByte(id, '"')]
	out, _, code = n.cli(t, tok, "ps", "cli1")
	if code != 0 || !strings.Contains(out, id) {
		t.Fatalf("ps: %d %q", code, out)
	}
	out, _, code = n.cli(t, tok, "logs", "cli1", id, "-f")
	if code != 0 || out != "line1\nline2\n" {
		t.Fatalf("logs -f: %d %q", code, out)
	}
	out, _, code = n.cli(t, tok, "cluster")
	if code != 0 || !strings.Contains(out, "e2e") {
		t.Fatalf("cluster: %d %q", code, out)
	}
	_, errOut, code = n.cli(t, "wrong", "sandboxes")
	if code == 0 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("wrong token: %d %q", code, errOut)
	}
	_, errOut, code = n.cli(t, tok, "exec", "nope", "--", "true")
	if code == 0 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("unknown sandbox: %d %q", code, errOut)
	}
}

func TestServeRefusesPublicAddressWithoutToken(t *testing.T) {
	cmd := exec.Command(buildBinary(t), "serve", "--listen", "0.0.0.0:0", "--raft-listen", "127.0.0.1:0", "--data", t.TempDir())
	cmd.Env = append(os.Environ(), "SANDGATE_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "token") {
		t.Fatalf("serve on 0.0.0.0 without a token: %v %s", err, out)
	}
}

func rss(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
