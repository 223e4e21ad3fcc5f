// Package cluster holds cluster.sh, which `make cluster` runs: three sandgate nodes on
// loopback. Its test runs the script against the binary built from this tree.
package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// bound limits every wait on the script: it starts real servers on a loaded machine.
const bound = 2 * time.Minute

func buildSandgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandgate")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sandgate").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePorts returns n loopback ports reserved for the script's nodes until t ends.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		_, p, _ := net.SplitHostPort(clustertest.FreeAddr(t))
		ports = append(ports, p)
	}
	return ports
}

// script is one run of cluster.sh, its output gathered as it comes.
type script struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   strings.Builder
	ready chan struct{} // closed at the "ready" line
	done  chan struct{} // closed once the script has exited and its output is read
	err   error
}

func (s *script) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func startScript(t *testing.T, bin string, httpPorts, raftPorts []string) *script {
	t.Helper()
	cmd := exec.Command("bash", "cluster.sh")
	cmd.Env = append(os.Environ(),
		"SANDGATE_BIN="+bin, "SANDGATE_TOKEN=", "CLUSTER_DATA="+t.TempDir(),
		"CLUSTER_HTTP_PORTS="+strings.Join(httpPorts, " "), "CLUSTER_RAFT_PORTS="+strings.Join(raftPorts, " "))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	s := &script{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		pw.Close()
	}()
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if strings.HasPrefix(sc.Text(), "cluster: ready: ") {
				close(s.ready)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-s.done
	})
	return s
}

// wait waits for the script to end and returns its exit code.
func (s *script) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(bound):
		t.Fatalf("cluster.sh did not end within %v; output:\n%s", bound, s.output())
	}
	return s.cmd.ProcessState.ExitCode()
}

// clusterOf asks the node at addr for GET /v1/cluster through the CLI.
func clusterOf(t *testing.T, bin, addr, token string) (c struct {
	Members []struct{ ID, Status string }
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "cluster", "-o", "json")
	cmd.Env = append(os.Environ(), "SANDGATE_ADDR=http://"+addr, "SANDGATE_TOKEN="+token)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sandgate cluster at %s: %v", addr, err)
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("sandgate cluster at %s: %v\n%s", addr, err, out)
	}
	return c
}

// TestClusterScript runs cluster.sh with one node (the whole path: start, wait for
// the member, print how to use it, stop on Ctrl-C) and with three, which must show
// three alive members on every node and stop them all on Ctrl-C.
func TestClusterScript(t *testing.T) {
	bin := buildSandgate(t)
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			ports := freePorts(t, 2*n)
			httpPorts, raftPorts := ports[:n], ports[n:]
			s := startScript(t, bin, httpPorts, raftPorts)
			select {
			case <-s.ready:
			case <-s.done:
				code := s.wait(t)
				t.Fatalf("cluster.sh exited (%d) before the cluster was ready; output:\n%s", code, s.output())
			case <-time.After(bound):
				t.Fatalf("cluster.sh not ready within %v; output:\n%s", bound, s.output())
			}
			out := s.output()
			token := between(out, "  token:      ", "\n")
			if len(token) != 32 || !strings.Contains(out, "?token="+token) {
				t.Fatalf("no token printed; output:\n%s", out)
			}
			// The CLI line lists every node, so the CLI can move on when one stops.
			var addrs []string
			for _, p := range httpPorts {
				addrs = append(addrs, "http://127.0.0.1:"+p)
			}
			if want := "export SANDGATE_ADDR=" + strings.Join(addrs, ",") + " "; !strings.Contains(out, want) {
				t.Errorf("the CLI line lacks %q; output:\n%s", want, out)
			}
			for _, p := range httpPorts {
				c := clusterOf(t, bin, "127.0.0.1:"+p, token)
				alive := 0
				for _, m := range c.Members {
					if m.Status == "alive" {
						alive++
					}
				}
				if len(c.Members) != n || alive != n {
					t.Fatalf("node at %s sees %+v, want %d alive members", p, c.Members, n)
				}
			}
			// Ctrl-C: the terminal's SIGINT reaches the script, whose nodes are in
			// sessions of their own.
			if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := s.wait(t); code != 130 || !strings.Contains(s.output(), "cluster: stopped") {
				t.Fatalf("after SIGINT: exit %d; output:\n%s", code, s.output())
			}
			checkClosed(t, httpPorts)
		})
	}
}

// checkClosed fails unless nothing listens on the ports any more: the script's nodes
// are gone (leakcheck also finds any that were orphaned).
func checkClosed(t *testing.T, ports []string) {
	t.Helper()
	for _, p := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on 127.0.0.1:%s after the script ended", p)
		}
	}
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
