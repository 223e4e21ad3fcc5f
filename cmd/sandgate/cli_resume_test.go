package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// procID returns the id of a process object.
func procID(t *testing.T, proc string) string {
	t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(proc), &p); err != nil || p.ID == "" {
		t.Fatalf("process object %q: %v", proc, err)
	}
	return p.ID
}

// TestCLIStreamsResumeAfterRestart: the streaming commands (logs -f, exec, exec -t,
// events -f) survive their node's restart: the server ends their streams (SSE
// connections close, WebSockets close with 1012) and they reconnect from the offset
// or seq reached, so no byte or event is lost or repeated. The processes themselves
// end with the node, and the commands report how.
func TestCLIStreamsResumeAfterRestart(t *testing.T) {
	data := t.TempDir()
	n := startNodeAt(t, freeAddr(t), data, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"rs1"}`)
	proc := procID(t, n.post(t, cliToken, "/v1/sandboxes/rs1/processes", `{"command":"echo line1; sleep 300"}`))

	logs := n.start(t, cliToken, "logs", "-f", "rs1", proc)
	execPlain := n.start(t, cliToken, "exec", "rs1", "--", "sh", "-c", "echo plain; sleep 300")
	execTTY := n.start(t, cliToken, "exec", "-t", "rs1", "--", "sh", "-c", "echo tty; sleep 300")
	events := n.start(t, cliToken, "events", "-f", "-o", "json", "rs1")
	for _, c := range []struct {
		l    *liveCLI
		want string
	}{{logs, "line1"}, {execPlain, "plain"}, {execTTY, "tty"}} {
		if got := c.l.line(t); got != c.want {
			t.Fatalf("first line %q, want %q", got, c.want)
		}
	}
	// Read events up to the exec -t's process: every event so far has been printed.
	seen := map[int64]string{}
	readEvent := func() (int64, string) {
		var ev struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
		}
		line := events.line(t)
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events line %q: %v", line, err)
		}
		if prev, dup := seen[ev.Seq]; dup {
			t.Fatalf("event %d printed twice (%s, then %s)", ev.Seq, prev, line)
		}
		seen[ev.Seq] = line
		return ev.Seq, ev.Type
	}
	for created := 0; created < 3; {
		if _, typ := readEvent(); typ == "process.created" {
			created++
		}
	}

	n = n.restart(t, cliToken, data)

	// logs -f: the process ended with the node; nothing was repeated.
	if rest, code := logs.wait(t); code != 0 || len(rest) != 0 {
		t.Errorf("logs -f: exit %d, more output %q, stderr %q", code, rest, logs.stderr.String())
	}
	for _, c := range []struct {
		name string
		l    *liveCLI
	}{{"exec", execPlain}, {"exec -t", execTTY}} {
		rest, code := c.l.wait(t)
		if code <= 128 || code == 130 || len(rest) != 0 {
			t.Errorf("%s: exit %d (want 128+signal), more output %q, stderr %q", c.name, code, rest, c.l.stderr.String())
		}
	}
	// events -f: the events of the shutdown, then one posted after the restart, each
	// once and in order.
	n.post(t, cliToken, "/v1/sandboxes/rs1/events", `{"type":"agent.after_restart","data":{}}`)
	last := int64(0)
	for {
		seq, typ := readEvent()
		if seq <= last {
			t.Fatalf("event %d after %d", seq, last)
		}
		last = seq
		if typ == "agent.after_restart" {
			break
		}
	}
	events.interrupt(t)
	if _, code := events.wait(t); code != 130 {
		t.Errorf("events -f after SIGINT: exit %d, stderr %q", code, events.stderr.String())
	}
	for _, l := range []*liveCLI{logs, execPlain, execTTY, events} {
		if s := l.stderr.String(); strings.Contains(s, "retries") {
			t.Errorf("a stream gave up: %q", s)
		}
	}
}

// TestCLIAttachAfterRestart: attach outlives its node's restart. The server closes
// the WebSocket with 1012; the terminal's shell ends with the node and a new one is
// started behind the same terminal id, whose output attach shows.
func TestCLIAttachAfterRestart(t *testing.T) {
	data := t.TempDir()
	n := startNodeAt(t, freeAddr(t), data, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"ra1"}`)
	l := n.start(t, cliToken, "attach", "--create", "ra1", "t1")
	waitLine := func(want string) {
		t.Helper()
		for {
			if strings.Contains(l.line(t), want) {
				return
			}
		}
	}
	if _, err := l.stdin.Write([]byte("echo before-$((1+1))\n")); err != nil {
		t.Fatal(err)
	}
	waitLine("before-2")
	n.restart(t, cliToken, data)
	if _, err := l.stdin.Write([]byte("echo after-$((2+3))\n")); err != nil {
		t.Fatal(err)
	}
	waitLine("after-5")
	if _, err := l.stdin.Write([]byte("exit 4\n")); err != nil {
		t.Fatal(err)
	}
	if _, code := l.wait(t); code != 4 {
		t.Fatalf("exit %d, want the shell's 4; stderr %q", code, l.stderr.String())
	}
	if !strings.Contains(l.stderr.String(), "a new one started") {
		t.Errorf("the new shell was not announced: stderr %q", l.stderr.String())
	}
}
