package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const cliToken = "cli-token"

// TestCLISandboxes drives create, ls and rm against a real node: their output, their
// JSON, and exit code 125 for errors of sandgate itself.
func TestCLISandboxes(t *testing.T) {
	n := startNode(t, cliToken)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring; "=" prefix: exact
		stderr string // substring
	}{
		{"create with id", []string{"create", "--id", "life1", "--label", "team=a", "--env", "GREETING=hi"}, 0, "=life1\n", ""},
		{"create again, same settings", []string{"create", "--id", "life1", "--label", "team=a", "--env", "GREETING=hi"}, 0, "=life1\n", ""},
		{"create again, other settings", []string{"create", "--id", "life1", "--label", "team=b"}, 125, "=", "conflict"},
		{"create with server id", []string{"create"}, 0, "sb_", ""},
		{"create json", []string{"create", "--id", "life2", "-o", "json"}, 0, `"id": "life2"`, ""},
		{"create bad id", []string{"create", "--id", "Bad Id!"}, 125, "=", "invalid_argument"},
		{"create bad label", []string{"create", "--label", "novalue"}, 125, "=", "usage: sandgate create"},
		{"sandbox env reaches exec", []string{"exec", "life1", "--", "sh", "-c", "echo $GREETING"}, 0, "=hi\n", ""},
		{"ls", []string{"ls"}, 0, "team=a", ""},
		{"ls by label", []string{"ls", "--label", "team=a"}, 0, "life1", ""},
		{"sandboxes is ls", []string{"sandboxes", "--output", "table"}, 0, "life2", ""},
		{"ls bad output", []string{"ls", "--output", "yaml"}, 125, "=", `unknown output format "yaml"`},
		{"ls extra argument", []string{"ls", "x"}, 125, "=", "usage: sandgate ls"},
		{"rm one missing", []string{"rm", "life1", "nope"}, 125, "=life1\n", `not_found`},
		{"rm nothing", []string{"rm"}, 125, "=", "wrong number of arguments"},
		{"exec in removed sandbox", []string{"exec", "life1", "--", "true"}, 125, "=", "not_found"},
		{"wrong token", []string{"ls", "--token", "bad"}, 125, "=", "unauthorized"},
		{"unreachable", []string{"ls", "--addr", "127.0.0.1:1"}, 125, "=", "is a gateway running"},
		{"unknown command", []string{"frobnicate"}, 125, "=", `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := n.run(t, cliToken, cliRun{args: tt.args})
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stdout %q stderr %q", code, tt.code, out, errOut)
			}
			if want, exact := strings.CutPrefix(tt.stdout, "="); exact && out != want || !exact && !strings.Contains(out, want) {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
			if !strings.Contains(errOut, tt.stderr) || tt.stderr == "" && errOut != "" {
				t.Errorf("stderr %q, want %q", errOut, tt.stderr)
			}
		})
	}
	t.Run("ls json", func(t *testing.T) {
		out, errOut, code := n.run(t, cliToken, cliRun{args: []string{"ls", "--output", "json"}})
		var list struct {
			Sandboxes []struct {
				ID     string            `json:"id"`
				Labels map[string]string `json:"labels"`
			} `json:"sandboxes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
		}
		ids := map[string]bool{}
		for _, s := range list.Sandboxes {
			ids[s.ID] = true
		}
		if ids["life1"] || !ids["life2"] || len(list.Sandboxes) != 2 {
			t.Fatalf("after rm life1: %+v", list.Sandboxes)
		}
	})
}

// TestCLIExec runs commands with exec against a real node: the command's exit code
// passes through, and errors of sandgate exit 125.
func TestCLIExec(t *testing.T) {
	n := startNode(t, cliToken)
	n.post(t, cliToken, "/v1/sandboxes", `{"id":"ex1"}`)
	if _, errOut, code := n.run(t, cliToken, cliRun{args: []string{"exec", "ex1", "--", "mkdir", "-p", "sub"}}); code != 0 {
		t.Fatalf("mkdir: %d %q", code, errOut)
	}
	tests := []struct {
		name           string
		r              cliRun
		code           int
		stdout, stderr string // "~" prefix: substring
	}{
		{"exit code and both streams", cliRun{args: []string{"exec", "ex1", "--", "sh", "-c", "echo out; echo err >&2; exit 5"}}, 5, "out\n", "err\n"},
		{"shell command", cliRun{args: []string{"exec", "ex1", "--", "echo a | tr a b"}}, 0, "b\n", ""},
		{"argv without --", cliRun{args: []string{"exec", "ex1", "printf", "%s-%s", "x y", "z"}}, 0, "x y-z", ""},
		{"env and cwd", cliRun{args: []string{"exec", "--env", "A=1", "ex1", "--cwd", "sub", "-e", "B=2", "--", "sh", "-c", `echo $A$B; basename "$PWD"`}}, 0, "12\nsub\n", ""},
		{"stdin with -i", cliRun{args: []string{"exec", "-i", "ex1", "--", "od", "-An", "-c"}, stdin: "a\x00b"}, 0, "~a  \\0   b", ""},
		{"empty stdin without -i", cliRun{args: []string{"exec", "ex1", "--", "cat"}, stdin: "ignored"}, 0, "", ""},
		{"signal gives 128+n", cliRun{args: []string{"exec", "ex1", "--", "sh", "-c", "kill -TERM $$"}}, 143, "", ""},
		{"timeout gives 124", cliRun{args: []string{"exec", "--timeout", "1s", "ex1", "--", "sleep", "60"}}, 124, "", "~timed out after 1s"},
		{"-t without a terminal", cliRun{args: []string{"exec", "-t", "ex1", "--", "sh", "-c", "test -t 0 && echo tty; exit 7"}}, 7, "tty\r\n", ""},
		{"-it with piped stdin ends its input", cliRun{args: []string{"exec", "-it", "ex1", "--", "wc", "-c"}, stdin: "abc\n"}, 0, "~4\r\n", ""},
		{"-it with a partial last line", cliRun{args: []string{"exec", "-it", "ex1", "--", "wc", "-c"}, stdin: "abcde"}, 0, "~5\r\n", ""},
		{"argv program not found gives 127", cliRun{args: []string{"exec", "ex1", "--", "no-such-program", "arg"}}, 127, "", "~no-such-program: command not found"},
		{"lone command not found gives 127", cliRun{args: []string{"exec", "ex1", "--", "no-such-program"}}, 127, "", "~not found"},
		{"argv program not executable gives 126", cliRun{args: []string{"exec", "ex1", "--", "/etc/hostname", "arg"}}, 126, "", "~/etc/hostname: "},
		{"missing command", cliRun{args: []string{"exec", "ex1"}}, 125, "", "~usage: sandgate exec"},
		{"bad flag", cliRun{args: []string{"exec", "--nope", "ex1", "true"}}, 125, "", "~flag provided but not defined"},
		{"unknown sandbox", cliRun{args: []string{"exec", "nope", "--", "true"}}, 125, "", "~not_found"},
		{"unreachable", cliRun{args: []string{"exec", "ex1", "true"}, addr: "http://127.0.0.1:1"}, 125, "", "~is a gateway running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := n.run(t, cliToken, tt.r)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stdout %.200q stderr %q", code, tt.code, out, errOut)
			}
			for _, c := range []struct{ what, got, want string }{{"stdout", out, tt.stdout}, {"stderr", errOut, tt.stderr}} {
				if want, sub := strings.CutPrefix(c.want, "~"); sub && !strings.Contains(c.got, want) || !sub && c.got != want {
					t.Errorf("%s %.200q, want %.200q", c.what, c.got, c.want)
				}
			}
		})
	}
}
