package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestCLIKillAndEvents: kill signals a process, inspect shows it and its sandbox,
// and events prints the log as lines or JSON, with their errors.
func TestCLIKillAndEvents(t *testing.T) {
	n := startNode(t, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"ke1"}`)
	proc := procID(t, n.post(t, cliToken, "/v1/sandboxes/ke1/processes", `{"command":"sleep 300"}`))
	n.post(t, cliToken, "/v1/sandboxes/ke1/events", `{"type":"agent.note","data":{"k":"v"}}`)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // regexp
		stderr string // substring
	}{
		{"kill bad signal", []string{"kill", "--signal", "SIGBOGUS", "ke1", proc}, 125, `^$`, "invalid_argument"},
		{"kill unknown process", []string{"kill", "ke1", "proc_nope"}, 125, `^$`, "not_found"},
		{"kill", []string{"kill", "-s", "TERM", "ke1", proc}, 0, `^$`, ""},
		{"logs of the killed process", []string{"logs", "-f", "ke1", proc}, 0, `^$`, ""},
		{"events", []string{"events", "ke1"}, 0, `(?m)^1\t\S+\tsandbox\.created\t.*\n(.*\n)*\d+\t\S+\tagent\.note\t\{"k":"v"\}$`, ""},
		{"events since", []string{"events", "--since", "1", "ke1"}, 0, `^2\t`, ""},
		{"events of unknown sandbox", []string{"events", "nope"}, 125, `^$`, "not_found"},
		{"events bad output", []string{"events", "-o", "xml", "ke1"}, 125, `^$`, "unknown output format"},
		{"events no sandbox", []string{"events"}, 125, `^$`, "usage: sandgate events"},
		{"inspect sandbox", []string{"inspect", "ke1"}, 0, `(?m)^ID +ke1$(.*\n)*^STATE +running$`, ""},
		{"inspect sandbox json", []string{"inspect", "-o", "json", "ke1"}, 0, `^\{\n  "id": "ke1",\n  "state": "running"`, ""},
		{"inspect process", []string{"inspect", "ke1", proc}, 0, `(?m)^COMMAND +sleep 300$(.*\n)*^EXIT +143 \(SIGTERM\)$`, ""},
		{"inspect process json", []string{"inspect", "ke1", proc, "--output", "json"}, 0, `"signal": "SIGTERM"`, ""},
		{"inspect unknown sandbox", []string{"inspect", "nope"}, 125, `^$`, "not_found"},
		{"inspect unknown process", []string{"inspect", "ke1", "proc_nope"}, 125, `^$`, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := n.run(t, cliToken, cliRun{args: tt.args})
			if code != tt.code || !regexp.MustCompile(tt.stdout).MatchString(out) || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, stdout ~%s, stderr ~%q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	t.Run("process exited by the signal", func(t *testing.T) {
		out, _, code := n.run(t, cliToken, cliRun{args: []string{"ps", "ke1", "-o", "json"}})
		if code != 0 || !strings.Contains(out, `"signal": "SIGTERM"`) {
			t.Fatalf("ps: %d %s", code, out)
		}
	})
	t.Run("events json", func(t *testing.T) {
		out, errOut, code := n.run(t, cliToken, cliRun{args: []string{"events", "--output", "json", "ke1"}})
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) < 4 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		types := []string{}
		for i, l := range lines {
			var ev struct {
				Seq  int64           `json:"seq"`
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != int64(i+1) {
				t.Fatalf("line %d %q: %v", i, l, err)
			}
			types = append(types, ev.Type)
		}
		if want := "sandbox.created process.created agent.note process.exited"; !strings.HasPrefix(strings.Join(types, " "), want) {
			t.Fatalf("types %q, want them to start %q", types, want)
		}
	})
}

// TestCLIVersion: --version and version print the build information Go embedded in
// the binary: the module version, and the commit when the build recorded one.
func TestCLIVersion(t *testing.T) {
	bin := buildBinary(t)
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	mod := regexp.MustCompile(`(?m)^\tmod\t\S+\t(\S+)`).FindSubmatch(info)
	if mod == nil {
		t.Fatalf("no module line in %s", info)
	}
	want := []string{"sandgate " + string(mod[1]) + "\n", "go go1."}
	if rev := regexp.MustCompile(`(?m)^\tbuild\tvcs\.revision=(\S+)`).FindSubmatch(info); rev != nil {
		want = append(want, "revision "+string(rev[1]))
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v printed %q, want %q in it", args, out, w)
			}
		}
	}
	if out, err := exec.Command(bin, "version", "extra").CombinedOutput(); exitCode(t, err) != 125 || !strings.Contains(string(out), "usage: sandgate version") {
		t.Errorf("version extra: %v %q", err, out)
	}
}
