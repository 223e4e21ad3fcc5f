package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
)

// movePatience bounds each wait of the ownership-move tests: a drain moves the
// owner's idle partitions first, at 64 a second, so a busy sandbox moves after about
// 20 s, more on a loaded machine.
const movePatience = 3 * time.Minute

// gapRE matches the CLI's report of output it cannot print.
var gapRE = regexp.MustCompile(`(\d+) bytes of output \[(\d+), (\d+)\)`)

// checkGaps checks that stderr reports, as gaps, exactly the bytes from printed to
// end: the output a stream could not deliver once its process ended with its node.
func checkGaps(t *testing.T, name, stderr string, printed, end int64) {
	t.Helper()
	next := printed
	for _, m := range gapRE.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		from, _ := strconv.ParseInt(m[2], 10, 64)
		to, _ := strconv.ParseInt(m[3], 10, 64)
		if from != next || to-from != n || to <= from {
			t.Errorf("%s: gap [%d, %d) of %d bytes after byte %d: %q", name, from, to, n, next, stderr)
		}
		next = to
	}
	if next != end {
		t.Errorf("%s: printed %d bytes, gaps up to %d, but the process wrote %d; stderr %q", name, printed, next, end, stderr)
	}
}

// moveCluster is a 3-node cluster with one sandbox whose owner is not the leader,
// and a node that is neither, which the CLI talks to.
type moveCluster struct {
	c          *clustertest.Cluster
	sb         string
	owner, via *clustertest.Node
}

// startMoveCluster starts three nodes and creates a sandbox owned by the node that
// joined last (or, when that one leads, the other follower): draining the leader
// would add an election to the move, and right after the start the leader still owns
// most partitions, which its drain would move at the rebalance rate (64 a second).
// Sandboxes are created until one lands on a partition the rebalance already gave to
// that node. The last node to join is its partitions' final rendezvous owner, so
// nothing but the drain moves the sandbox (a partition that went to the second node
// before the third joined may still move on to the third).
func startMoveCluster(t *testing.T, prefix string) *moveCluster {
	t.Helper()
	c := clustertest.Start(t, &clustertest.Config{Token: cliToken})
	ctx, cancel := context.WithTimeout(t.Context(), movePatience)
	defer cancel()
	info, err := c.Info(ctx, c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	target := c.Nodes[2]
	if target.ID == info.Leader {
		target = c.Nodes[1]
	}
	for i := range 1000 {
		sb := fmt.Sprintf("%s%d", prefix, i)
		var rec struct {
			Node string `json:"node"`
		}
		resp, err := c.Nodes[0].Do(ctx, "POST", "/v1/sandboxes", map[string]any{"id": sb})
		if err == nil {
			err = resp.JSON(201, &rec)
		}
		if err != nil {
			t.Fatalf("create %s: %v", sb, err)
		}
		if rec.Node != target.ID {
			continue
		}
		m := &moveCluster{c: c, sb: sb, owner: c.Node(rec.Node)}
		for _, n := range c.Nodes {
			if n != m.owner && n.ID != info.Leader {
				m.via = n
			}
		}
		if m.owner == nil || m.via == nil {
			t.Fatalf("owner %q of %s, leader %q: no node to talk through", rec.Node, sb, info.Leader)
		}
		return m
	}
	t.Fatalf("1000 sandboxes, none owned by %s", target.ID)
	return nil
}

// drain drains the sandbox's owner with `sandgate cluster drain` through via, and
// waits until another node owns the sandbox.
func (m *moveCluster) drain(t *testing.T) string {
	t.Helper()
	out, errOut, code := (&node{}).run(t, cliToken, cliRun{addr: m.via.URL(), args: []string{"cluster", "drain", m.owner.ID}})
	if code != 0 || out != m.owner.ID+"\n" {
		t.Fatalf("cluster drain %s: %d %q %q", m.owner.ID, code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(t.Context(), movePatience)
	defer cancel()
	for {
		var rec struct {
			Node string `json:"node"`
		}
		resp, err := m.via.Do(ctx, "GET", "/v1/sandboxes/"+m.sb, nil)
		if err == nil {
			err = resp.JSON(200, &rec)
		}
		if err == nil && rec.Node != "" && rec.Node != m.owner.ID {
			return rec.Node
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still owned by %s %v after its drain (last: %v)", m.sb, m.owner.ID, movePatience, err)
		case <-time.After(100 * time.Millisecond): // ownership has no event to wait on over HTTP
		}
	}
}

// outputOffset returns the output_offset and status of process proc, asked through n.
func (m *moveCluster) outputOffset(t *testing.T, proc string, n *clustertest.Node) (int64, string) {
	t.Helper()
	var p struct {
		Status       string `json:"status"`
		OutputOffset int64  `json:"output_offset"`
	}
	resp, err := n.Do(t.Context(), "GET", "/v1/sandboxes/"+m.sb+"/processes/"+proc, nil)
	if err == nil {
		err = resp.JSON(200, &p)
	}
	if err != nil {
		t.Fatalf("process %s: %v", proc, err)
	}
	return p.OutputOffset, p.Status
}

// TestCLIStreamsResumeAfterDrain: the streaming commands follow a sandbox through a
// planned ownership move in a real three-node cluster. They talk to a node that does
// not own the sandbox; its owner is drained. A drain ends the sandbox's running
// processes (their output ring stays with the old node), so logs -f, exec and exec -t
// print what their streams delivered, each byte once and in order, report the bytes
// written after their streams were closed as a gap, and exit as the docs say: logs
// with 0 once the process exited, exec with 128+signal. attach comes back to a new
// shell behind the same terminal, and events -f prints sandbox.moved, each event
// once.
func TestCLIStreamsResumeAfterDrain(t *testing.T) {
	m := startMoveCluster(t, "mv")
	addr := m.via.HTTPAddr
	var proc struct {
		ID string `json:"id"`
	}
	resp, err := m.via.Do(t.Context(), "POST", "/v1/sandboxes/"+m.sb+"/processes", map[string]any{"command": counter("log")})
	if err == nil {
		err = resp.JSON(201, &proc)
	}
	if err != nil {
		t.Fatal(err)
	}

	logs := startRaw(t, "logs -f", addr, cliToken, "logs", "-f", m.sb, proc.ID)
	execPlain := startRaw(t, "exec", addr, cliToken, "exec", m.sb, "--", counter("plain"))
	execTTY := startRaw(t, "exec -t", addr, cliToken, "exec", "-t", m.sb, "--", counter("tty"))
	events := startRaw(t, "events -f", addr, cliToken, "events", "-f", "-o", "json", m.sb)
	attach := startRaw(t, "attach", addr, cliToken, "attach", "--create", m.sb, "t1")
	for _, c := range []struct {
		r         *rawCLI
		word, eol string
	}{{logs, "log", "\n"}, {execPlain, "plain", "\n"}, {execTTY, "tty", "\r\n"}} {
		c.r.waitOut(t, "three lines", func(s string) bool { n, _ := isCount(s, c.word, c.eol); return n >= 3 })
	}
	if _, err := io.WriteString(attach.stdin, "echo before-$((1+1))\n"); err != nil {
		t.Fatal(err)
	}
	attach.waitOut(t, "before-2", func(s string) bool { return strings.Contains(s, "before-2") })
	events.waitOut(t, "the terminal's process", func(s string) bool { return strings.Count(s, `"process.created"`) >= 3 })

	began := time.Now()
	to := m.drain(t)
	t.Logf("%s moved from %s to %s in %v", m.sb, m.owner.ID, to, time.Since(began))

	// logs -f: every byte its stream delivered, once, then a gap up to the end of
	// the process's output; exit 0 as for any process that exited.
	if code := logs.wait(t); code != 0 {
		t.Errorf("logs -f: exit %d, stderr %q", code, logs.stderr.String())
	}
	end, status := m.outputOffset(t, proc.ID, m.via)
	if status != "exited" {
		t.Errorf("process after the drain: %s", status)
	}
	out := logs.stdout()
	if n, ok := isCount(out, "log", "\n"); !ok || n < 3 {
		t.Errorf("logs -f printed %d whole lines, in order: %v; stdout %q", n, ok, out)
	}
	checkGaps(t, "logs -f", logs.stderr.String(), int64(len(out)), end)

	for _, c := range []struct {
		r         *rawCLI
		word, eol string
	}{{execPlain, "plain", "\n"}, {execTTY, "tty", "\r\n"}} {
		code := c.r.wait(t)
		out := c.r.stdout()
		if n, ok := isCount(out, c.word, c.eol); !ok || n < 3 {
			t.Errorf("%s printed %d whole lines, in order: %v; stdout %q", c.r.name, n, ok, out)
		}
		if code <= 128 || code == exitInterrupted {
			t.Errorf("%s: exit %d, want 128+signal; stderr %q", c.r.name, code, c.r.stderr.String())
		}
		if strings.Contains(c.r.stderr.String(), "retries") {
			t.Errorf("%s gave up: %q", c.r.name, c.r.stderr.String())
		}
		t.Logf("%s: exit %d, %d bytes, stderr %q", c.r.name, code, len(out), c.r.stderr.String())
	}
	checkGaps(t, "exec", execPlain.stderr.String(), int64(len(execPlain.stdout())), execEnd(t, m, "plain"))
	checkGaps(t, "exec -t", execTTY.stderr.String(), int64(len(execTTY.stdout())), execEnd(t, m, "tty"))

	// attach: the terminal's shell ended with the move; a new one answers.
	attach.typeInNewShell(t, "echo after-$((2+3))\n", "after-5")
	if _, err := io.WriteString(attach.stdin, "exit 4\n"); err != nil {
		t.Fatal(err)
	}
	if code := attach.wait(t); code != 4 {
		t.Errorf("attach: exit %d, want the shell's 4; stderr %q", code, attach.stderr.String())
	}
	if !strings.Contains(attach.stderr.String(), "a new one started") {
		t.Errorf("attach: the new shell was not announced: stderr %q", attach.stderr.String())
	}

	// events -f: sandbox.moved (planned) and everything before it, each once and in
	// order.
	events.waitOut(t, "sandbox.moved", func(s string) bool { return strings.Contains(s, `"sandbox.moved"`) })
	_ = events.cmd.Process.Signal(syscall.SIGINT)
	if code := events.wait(t); code != exitInterrupted {
		t.Errorf("events -f after SIGINT: exit %d, stderr %q", code, events.stderr.String())
	}
	last, moved := int64(0), 0
	for _, line := range strings.Split(strings.TrimSuffix(events.stdout(), "\n"), "\n") {
		var ev struct {
			Seq  int64          `json:"seq"`
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events line %q: %v", line, err)
		}
		if ev.Seq <= last {
			t.Errorf("event %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if ev.Type == "sandbox.moved" {
			moved++
			if ev.Data["planned"] != true || ev.Data["from"] != m.owner.ID || ev.Data["to"] != to {
				t.Errorf("sandbox.moved %v, want planned from %s to %s", ev.Data, m.owner.ID, to)
			}
		}
	}
	if moved != 1 {
		t.Errorf("%d sandbox.moved events printed:\n%s", moved, events.stdout())
	}
}

// execEnd returns the output offset of the exited exec process whose command prints
// word: where its output ended.
func execEnd(t *testing.T, m *moveCluster, word string) int64 {
	t.Helper()
	var list struct {
		Processes []struct {
			ID      string `json:"id"`
			Command string `json:"command"`
		} `json:"processes"`
	}
	resp, err := m.via.Do(t.Context(), "GET", "/v1/sandboxes/"+m.sb+"/processes?tag=exec", nil)
	if err == nil {
		err = resp.JSON(200, &list)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Processes {
		if p.Command == counter(word) {
			end, status := m.outputOffset(t, p.ID, m.via)
			if status != "exited" {
				t.Errorf("exec process %s after the drain: %s", word, status)
			}
			return end
		}
	}
	t.Fatalf("no exec process printing %q: %+v", word, list.Processes)
	return 0
}
