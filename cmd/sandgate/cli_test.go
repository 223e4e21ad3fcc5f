package main

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring expected in stdout ("" : none expected)
		stderr     string
		noRequests bool
	}{
		{"no args", nil, 125, "", "commands:", true},
		{"help", []string{"help"}, 0, "commands:", "", true},
		{"--help", []string{"--help"}, 0, "attach", "", true},
		{"help of a command", []string{"help", "logs"}, 0, "usage: sandgate logs", "", true},
		{"help of unknown", []string{"help", "nope"}, 125, "", `unknown command "nope"`, true},
		{"unknown command", []string{"frobnicate"}, 125, "", `unknown command "frobnicate"`, true},
		{"exec --help", []string{"exec", "--help"}, 0, "SANDBOX [--] COMMAND", "", true},
		{"exec -h", []string{"exec", "-h"}, 0, "--timeout", "", true},
		{"exec missing all", []string{"exec"}, 125, "", "missing SANDBOX", true},
		{"exec missing command", []string{"exec", "sb1", "--"}, 125, "", "missing COMMAND", true},
		{"exec bad flag", []string{"exec", "--nope", "sb1", "--", "ls"}, 125, "", "flag provided but not defined: -nope\nusage: sandgate exec", true},
		{"exec bad env", []string{"exec", "--env", "novalue", "sb1", "ls"}, 125, "", `"novalue" is not k=v`, true},
		{"ps no sandbox", []string{"ps"}, 125, "", "wrong number of arguments", true},
		{"ps too many", []string{"ps", "a", "b"}, 125, "", "wrong number of arguments", true},
		{"logs one arg", []string{"logs", "sb1"}, 125, "", "usage: sandgate logs", true},
		{"attach --help", []string{"attach", "--help"}, 0, "Ctrl-]", "", true},
		{"sandboxes extra arg", []string{"sandboxes", "x"}, 125, "", "wrong number of arguments", true},
		{"cluster --help", []string{"cluster", "--help"}, 0, "--json", "", true},
		// serve's help and errors look like every other command's.
		{"serve bad flag", []string{"serve", "--no-such-flag"}, 125, "", "sandgate serve: flag provided but not defined: -no-such-flag\nusage: sandgate serve [flags]", true},
		{"serve extra argument", []string{"serve", "now"}, 125, "", "sandgate serve: unexpected argument \"now\"\nusage: sandgate serve", true},
		{"serve unknown runtime", []string{"serve", "--runtime", "vm"}, 125, "", "sandgate serve: unknown runtime", true},
		{"serve --help", []string{"serve", "--help"}, 0, "usage: sandgate serve [flags]", "", true},
		{"serve -h", []string{"serve", "-h"}, 0, "\n  --policy file\n", "", true},
		{"help serve", []string{"help", "serve"}, 0, "\n  --listen address\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, g := runCLI(t, nil, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if tt.stdout == "" && r.stdout != "" || !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout %q, want it to contain %q", r.stdout, tt.stdout)
			}
			if tt.stderr == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tt.stderr)
			}
			if tt.noRequests && g.requests() != "" {
				t.Errorf("made requests: %s", g.requests())
			}
		})
	}
}

func TestEnvAndFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string // substring of stderr
	}{
		{"unreachable gives a hint", map[string]string{"SANDGATE_ADDR": "127.0.0.1:1"}, []string{"ps", "sb1"}, 125, "is a gateway running at http://127.0.0.1:1"},
		{"--addr overrides env", map[string]string{"SANDGATE_ADDR": "127.0.0.1:2"}, []string{"ps", "--addr", "http://127.0.0.1:1", "sb1"}, 125, "http://127.0.0.1:1"},
		{"every address is tried", map[string]string{"SANDGATE_ADDR": "127.0.0.1:1, http://127.0.0.1:2"}, []string{"ps", "sb1"}, 125,
			"is a gateway running at http://127.0.0.1:1, http://127.0.0.1:2?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runWithEnv(t, tt.vars, nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("got %+v, want code %d and stderr ~%q", r, tt.code, tt.want)
			}
		})
	}
}

// TestSeveralAddresses: with several addresses, a command goes to the first one that
// can be reached.
func TestSeveralAddresses(t *testing.T) {
	t.Parallel()
	g := &fakeGateway{}
	srv := httptest.NewServer(g.handler())
	t.Cleanup(srv.Close)
	for _, flag := range []bool{false, true} {
		list := "127.0.0.1:1," + strings.TrimPrefix(srv.URL, "http://")
		vars, args := map[string]string{"SANDGATE_ADDR": list, "SANDGATE_TOKEN": "secret"}, []string{"ps", "sb1"}
		if flag {
			vars, args = map[string]string{"SANDGATE_TOKEN": "secret"}, []string{"ps", "--addr", list, "sb1"}
		}
		r := runWithEnv(t, vars, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "proc_a") {
			t.Fatalf("ps through %q (flag %v): %+v", list, flag, r)
		}
	}
	if got := g.requests(); strings.Count(got, "GET /v1/sandboxes/sb1/processes") != 2 {
		t.Fatalf("requests %q, want two ps", got)
	}
}

func TestPsSandboxesCluster(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    []string // substrings of stdout
		request string
	}{
		{"ps", []string{"ps", "sb1", "--status", "running"}, []string{"proc_a", "sleep 9", "web", "proc_b", "false"},
			"GET /v1/sandboxes/sb1/processes?status=running Bearer secret"},
		{"ps json", []string{"ps", "--json", "sb1"}, []string{`"id": "proc_a"`, `"exit_code": 1`}, ""},
		{"sandboxes", []string{"sandboxes", "--label", "a=1"}, []string{"dev1", "running", "n2", "a=1,b=2", "2026-11-22T02:00:00Z"},
			"GET /v1/sandboxes?label=a%3D1"},
		{"cluster", []string{"cluster"}, []string{"node n1, leader n2, term 7", "n2  ", "leader", "down"}, "GET /v1/cluster"},
		// The rest of the cluster's output: TestClusterCLI.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, g := runCLI(t, nil, tt.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %+v", r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout %q lacks %q", r.stdout, w)
				}
			}
			if !strings.Contains(g.requests(), tt.request) {
				t.Errorf("requests %s\nwant %s", g.requests(), tt.request)
			}
		})
	}
}

func TestLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		args           []string
		stdout, stderr string
	}{
		// The fake process is running with output_offset 6: without -f, logs stops there.
		{"buffered only", []string{"logs", "sb1", "proc_a"}, "abc", "DEF"},
		{"follow to exit", []string{"logs", "-f", "sb1", "proc_a"}, "abcghi", "DEF"},
		{"flag after args", []string{"logs", "sb1", "proc_a", "-f"}, "abcghi", "DEF"},
		{"gap is reported", []string{"logs", "-f", "sb1", "proc_gap"}, "ghi", "sandgate logs: 3 bytes of output [0, 3) lost: they left the output buffer, or the node the sandbox moved from, before they could be read\nDEF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := runCLI(t, nil, tt.args...)
			if r.code != 0 || r.stdout != tt.stdout || r.stderr != tt.stderr {
				t.Fatalf("got %+v, want stdout %q stderr %q", r, tt.stdout, tt.stderr)
			}
		})
	}
}

// slowReader returns its chunks one per Read, pausing between them, and then blocks
// until done is closed, like a terminal nobody types on.
type slowReader struct {
	chunks []string
	done   chan struct{}
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(s.chunks) == 0 {
		<-s.done
		return 0, io.EOF
	}
	time.Sleep(20 * time.Millisecond)
	n := copy(p, s.chunks[0])
	s.chunks = s.chunks[1:]
	return n, nil
}

func TestAttach(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		chunks  []string
		code    int
		stdout  string // substring
		stderr  string // substring
		ws      string // messages the server got, joined by |
		request string
	}{
		{"shell exit code", []string{"attach", "sb1", "main"}, []string{"ls\r", "exit\r"}, 5, "$ ls\rexit\r", "", "ls\r|exit\r",
			"GET /v1/sandboxes/sb1/terminals/main/ws?offset=0"},
		{"detach with ctrl-]", []string{"attach", "sb1", "main"}, []string{"pwd\r", "x\x1dignored"}, 0, "$ ", "[detached from sb1/main]", "pwd\r|x",
			"GET /v1/sandboxes/sb1/terminals/main"},
		{"missing terminal", []string{"attach", "sb1", "other"}, nil, 125, "", "use --create", "", ""},
		{"missing sandbox", []string{"attach", "nosuch", "main"}, nil, 125, "", `not_found: sandbox "nosuch" not found`, "", ""},
		{"gap is reported", []string{"attach", "sb1", "gappy"}, nil, 0, "abfg",
			"sandgate attach: 3 bytes of output [2, 5) lost: they left the output buffer, or the node the sandbox moved from, before they could be read\n",
			"", "GET /v1/sandboxes/sb1/terminals/gappy/ws?offset=0"},
		{"create", []string{"attach", "--create", "--offset", "7", "sb1", "other"}, []string{"exit\r"}, 5, "$ exit", "", "exit\r",
			"PUT /v1/sandboxes/sb1/terminals/other Bearer secret {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := &slowReader{chunks: tt.chunks, done: make(chan struct{})}
			t.Cleanup(func() { close(in.done) })
			r, g := runCLI(t, in, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("got %+v, want code %d, stdout ~%q, stderr ~%q", r, tt.code, tt.stdout, tt.stderr)
			}
			g.mu.Lock()
			ws := strings.Join(g.ws, "|")
			g.mu.Unlock()
			if ws != tt.ws {
				t.Errorf("server got %q, want %q", ws, tt.ws)
			}
			if !strings.Contains(g.requests(), tt.request) {
				t.Errorf("requests %s\nwant %s", g.requests(), tt.request)
			}
		})
	}
}

func TestSplitShort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"combined", "-it sb ls", "-i -t sb ls"},
		{"reversed", "-ti sb", "-t -i sb"},
		{"stops at the sandbox", "-i sb ls -it", "-i sb ls -it"},
		{"stops at --", "-- -it", "-- -it"},
		{"value of a flag is kept", "--cwd -it -it sb", "--cwd -it -i -t sb"},
		{"flag=value takes no value", "--cwd=x -it sb", "--cwd=x -i -t sb"},
		{"unknown letters are left to the parser", "-ix sb", "-ix sb"},
		{"long flags are left alone", "--timeout 1s -it", "--timeout 1s -i -t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFlags(&env{}, "exec", "")
			f.String("cwd", "", "")
			f.Duration("timeout", 0, "")
			f.Bool("i", false, "")
			f.Bool("t", false, "")
			if got := strings.Join(f.splitShort(strings.Fields(tt.args)), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
