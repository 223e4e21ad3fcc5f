package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestCLIExecStreams: exec prints output as the command makes it (the first line
// arrives while the command is still waiting for the test) and, with -i, sends input
// as it is typed.
func TestCLIExecStreams(t *testing.T) {
	n := startNode(t, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"st1"}`)

	t.Run("output", func(t *testing.T) {
		// The command cannot end before the test makes the file "go", which it does
		// only once it has read the first line.
		l := n.start(t, cliToken, "exec", "st1", "--", "sh", "-c", "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; exit 3")
		if got := l.line(t); got != "first" {
			t.Fatalf("first line %q", got)
		}
		if _, errOut, code := n.run(t, cliToken, cliRun{args: []string{"exec", "st1", "touch", "go"}}); code != 0 {
			t.Fatalf("touch: %d %q", code, errOut)
		}
		rest, code := l.wait(t)
		if code != 3 || strings.Join(rest, "|") != "second" {
			t.Fatalf("exit %d, rest %q, stderr %q", code, rest, l.stderr.String())
		}
	})
	t.Run("output past the buffer", func(t *testing.T) {
		// Three times the default output buffer, once exec is reading (it printed the
		// first line): a live reader is never skipped, so nothing is cut.
		l := n.start(t, cliToken, "exec", "st1", "--", "sh", "-c", "echo reading; while [ ! -e go2 ]; do sleep 0.05; done; head -c 3145728 /dev/zero | tr '\\0' x")
		if got := l.line(t); got != "reading" {
			t.Fatalf("first line %q", got)
		}
		if _, errOut, code := n.run(t, cliToken, cliRun{args: []string{"exec", "st1", "touch", "go2"}}); code != 0 {
			t.Fatalf("touch: %d %q", code, errOut)
		}
		rest, code := l.wait(t)
		if code != 0 || len(rest) != 1 || rest[0] != strings.Repeat("x", 3<<20) || l.stderr.String() != "" {
			t.Fatalf("exit %d, %d lines, stderr %q", code, len(rest), l.stderr.String())
		}
	})
	t.Run("input", func(t *testing.T) {
		l := n.start(t, cliToken, "exec", "-i", "st1", "--", "sh", "-c", `while read x; do echo "got $x"; done; echo eof`)
		for _, word := range []string{"one", "two"} {
			if _, err := io.WriteString(l.stdin, word+"\n"); err != nil {
				t.Fatal(err)
			}
			if got := l.line(t); got != "got "+word {
				t.Fatalf("line %q, want %q", got, "got "+word)
			}
		}
		l.stdin.Close() // end of input reaches the command as end of file
		rest, code := l.wait(t)
		if code != 0 || strings.Join(rest, "|") != "eof" {
			t.Fatalf("exit %d, rest %q, stderr %q", code, rest, l.stderr.String())
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		l := n.start(t, cliToken, "exec", "st1", "--", "sh", "-c", "echo started; sleep 300")
		if got := l.line(t); got != "started" {
			t.Fatalf("first line %q", got)
		}
		l.interrupt(t)
		if _, code := l.wait(t); code != 130 {
			t.Fatalf("exit %d, want 130; stderr %q", code, l.stderr.String())
		}
		// The command was this exec's: it was sent SIGTERM.
		waitExecKilled(t, n, "st1", "sleep 300", "SIGTERM")
	})
}

// waitExecKilled waits up to 30 s until the exec process of sb whose argv holds cmd
// has exited, killed by signal.
func waitExecKilled(t *testing.T, n *node, sb, cmd, signal string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, errOut, code := n.run(t, cliToken, cliRun{args: []string{"ps", sb, "--tag", "exec", "-o", "json"}})
		var procs struct {
			Processes []struct {
				Argv   []string `json:"argv"`
				Status string   `json:"status"`
				Signal *string  `json:"signal"`
			} `json:"processes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &procs) != nil {
			t.Fatalf("ps: %d %q %q", code, out, errOut)
		}
		last = out
		for _, p := range procs.Processes {
			if strings.Contains(strings.Join(p.Argv, " "), cmd) && p.Status == "exited" && p.Signal != nil && *p.Signal == signal {
				return
			}
		}
	}
	t.Fatalf("no exec process %q exited by %s within 30s: %s", cmd, signal, last)
}
