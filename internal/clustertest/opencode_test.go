package clustertest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// nodeTestTimeout bounds the whole Node run: a loaded machine, a cluster forwarding
// every request and a few seconds of SIGTERM grace in the remove.
const nodeTestTimeout = 5 * time.Minute

// TestOpenCodeSDK runs tools/opencode/pty.test.mjs, the published OpenCode SDK's pty
// client and the ws package, against a node of a 3-node cluster that does not own the
// sandbox: every OpenCode route, the ticket and the WebSocket go through the
// cluster's forwarding. It skips only when tools/ lacks the pinned packages (`make
// tools` installs them, as make test does).
func TestOpenCodeSDK(t *testing.T) {
	tools, err := filepath.Abs(filepath.Join("..", "..", "tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"@opencode-ai/sdk", "ws"} {
		if _, err := os.Stat(filepath.Join(tools, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("%s is not installed in tools/ (%v): run `make tools` (npm ci in tools/), as make test does", pkg, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v); tools/ is installed, so it was there", err)
	}

	c := clustertest.Start(t, &clustertest.Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := c.Nodes[0].Do(ctx, "POST", "/v1/sandboxes", map[string]string{"id": "oc1"})
	if err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("failed to create the sandbox: %v %v", resp, err)
	}
	// The leader rebalances partitions onto the new members for a while after the start,
	// but never one with running work: a process keeps the sandbox where it is, so the
	// node picked below stays a non-owner for the whole run.
	resp, err = c.Nodes[0].Do(ctx, "POST", "/v1/sandboxes/oc1/processes", map[string]any{"argv": []string{"sleep", "900"}, "tag": "pin"})
	var pin struct{ ID string }
	if err == nil {
		err = resp.JSON(http.StatusCreated, &pin)
	}
	if err != nil {
		t.Fatalf("failed to start the process that keeps the sandbox in place: %v", err)
	}
	owner := sandboxOwner(t, c, "oc1")
	var via *clustertest.Node
	for _, n := range c.Nodes {
		if n.ID != owner {
			via = n
			break
		}
	}
	if via == nil {
		t.Fatalf("no node but %s in %v", owner, c.Nodes)
	}
	t.Logf("sandbox oc1 is owned by %s; the SDK talks to %s", owner, via.ID)

	nctx, ncancel := context.WithTimeout(context.Background(), nodeTestTimeout)
	defer ncancel()
	cmd := exec.CommandContext(nctx, node, "--test", "--test-reporter=spec", filepath.Join("opencode", "pty.test.mjs"))
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "BASE_URL="+via.URL(), "TOKEN="+c.Token, "SB=oc1", "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// node --test runs the file in a child process: end the whole group on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if errors.Is(nctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the Node test did not end within %v:\n%s", nodeTestTimeout, out.String())
	}
	if err != nil {
		t.Fatalf("the Node test failed (%v):\n%s", err, out.String())
	}
	t.Logf("the Node test:\n%s", out.String())

	// The sandbox stayed where it was (a move would have ended the pinning process):
	// every request of the run was forwarded.
	if now := sandboxOwner(t, c, "oc1"); now != owner {
		t.Fatalf("the sandbox moved from %s to %s during the run", owner, now)
	}
	ctx, cancel = context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err = c.Nodes[0].Do(ctx, "GET", "/v1/sandboxes/oc1/processes/"+pin.ID, nil)
	var p struct{ Status string }
	if err == nil {
		err = resp.JSON(http.StatusOK, &p)
	}
	if err != nil || p.Status != "running" {
		t.Fatalf("the process that keeps the sandbox in place: %+v %v; the sandbox moved during the run", p, err)
	}
}

// sandboxOwner returns the node of sandbox sb as node 1 answers it.
func sandboxOwner(t *testing.T, c *clustertest.Cluster, sb string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := c.Nodes[0].Do(ctx, "GET", "/v1/sandboxes/"+sb, nil)
	var v struct{ Node string }
	if err == nil {
		err = resp.JSON(http.StatusOK, &v)
	}
	if err != nil || v.Node == "" || c.Node(v.Node) == nil {
		t.Fatalf("failed to get the node of sandbox %s: %+v %v", sb, v, err)
	}
	return v.Node
}
