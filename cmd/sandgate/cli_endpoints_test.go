package main

import (
	"io"
	"strings"
	"syscall"
	"testing"
)

// TestCLIStreamsFailOverToAnotherNode: given several members' addresses, the
// streaming commands outlive the node they talk to. logs -f, events -f and attach
// run with SANDGATE_ADDR listing a node that does not own the sandbox, then the
// owner; the first node is stopped (SIGTERM: it ends its streams, then its address
// refuses). Nothing moves: the process keeps running, so logs -f prints its whole
// output, each byte once and none lost, once it is killed; attach keeps its shell;
// events -f prints an event posted after the stop.
func TestCLIStreamsFailOverToAnotherNode(t *testing.T) {
	m := startMoveCluster(t, "fo")
	addrs := m.via.HTTPAddr + "," + m.owner.HTTPAddr
	var proc struct {
		ID string `json:"id"`
	}
	resp, err := m.owner.Do(t.Context(), "POST", "/v1/sandboxes/"+m.sb+"/processes", map[string]any{"command": counter("log")})
	if err == nil {
		err = resp.JSON(201, &proc)
	}
	if err != nil {
		t.Fatal(err)
	}
	logs := startRaw(t, "logs -f", addrs, cliToken, "logs", "-f", m.sb, proc.ID)
	events := startRaw(t, "events -f", addrs, cliToken, "events", "-f", "-o", "json", m.sb)
	attach := startRaw(t, "attach", addrs, cliToken, "attach", "--create", m.sb, "t1")
	logs.waitOut(t, "three lines", func(s string) bool { n, _ := isCount(s, "log", "\n"); return n >= 3 })
	if _, err := io.WriteString(attach.stdin, "x=$((6*7)); echo before-$x\n"); err != nil {
		t.Fatal(err)
	}
	attach.waitOut(t, "before-42", func(s string) bool { return strings.Contains(s, "before-42") })
	events.waitOut(t, "the terminal's process", func(s string) bool { return strings.Count(s, `"process.created"`) >= 2 })

	if code := m.via.Stop(t); code != 0 {
		t.Fatalf("%s stopped with exit %d", m.via.ID, code)
	}
	n, _ := isCount(logs.stdout(), "log", "\n")
	logs.waitOut(t, "more lines after the stop", func(s string) bool { k, _ := isCount(s, "log", "\n"); return k >= n+5 })

	// The same shell: its variable is still set.
	if _, err := io.WriteString(attach.stdin, "echo after-$x\n"); err != nil {
		t.Fatal(err)
	}
	attach.waitOut(t, "after-42", func(s string) bool { return strings.Contains(s, "after-42") })
	if strings.Contains(attach.stderr.String(), "a new one started") {
		t.Errorf("attach: the shell was replaced: %q", attach.stderr.String())
	}

	resp, err = m.owner.Do(t.Context(), "POST", "/v1/sandboxes/"+m.sb+"/events", map[string]any{"type": "agent.after_stop", "data": map[string]any{}})
	if err == nil {
		err = resp.JSON(201, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	events.waitOut(t, "the event posted after the stop", func(s string) bool { return strings.Contains(s, `"agent.after_stop"`) })

	resp, err = m.owner.Do(t.Context(), "POST", "/v1/sandboxes/"+m.sb+"/processes/"+proc.ID+"/signal", map[string]any{"signal": "SIGKILL"})
	if err == nil {
		err = resp.JSON(204, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if code := logs.wait(t); code != 0 {
		t.Errorf("logs -f: exit %d, stderr %q", code, logs.stderr.String())
	}
	end, _ := m.outputOffset(t, proc.ID, m.owner)
	out := logs.stdout()
	if k, ok := isCount(out, "log", "\n"); !ok || int64(len(out)) != end || logs.stderr.String() != "" {
		t.Errorf("logs -f printed %d bytes (%d lines, in order: %v) of %d; stderr %q", len(out), k, ok, end, logs.stderr.String())
	}

	_ = events.cmd.Process.Signal(syscall.SIGINT)
	_ = attach.cmd.Process.Signal(syscall.SIGINT)
	for _, r := range []*rawCLI{events, attach} {
		if code := r.wait(t); code != exitInterrupted {
			t.Errorf("%s after SIGINT: exit %d, stderr %q", r.name, code, r.stderr.String())
		}
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(events.stdout(), "\n"), "\n") {
		if seen[line] {
			t.Errorf("event printed twice: %s", line)
		}
		seen[line] = true
	}
}
