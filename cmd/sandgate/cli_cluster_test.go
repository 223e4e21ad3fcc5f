package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sdk"
)

// TestClusterCLI: `sandgate cluster` against the fake gateway: the table, JSON, and
// `cluster rm`, with the requests each makes.
func TestClusterCLI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings, or whole lines when they start with "^"
		stderr   string
		requests string
	}{
		{"table", []string{"cluster"}, 0, []string{
			"node n1, leader n2, term 7\n",
			"lease valid until 2026-11-22 02:00:03.500Z, applied index 99\n",
			"2 members, 1 voters; 4096 partitions\n",
			"^ID    STATUS  ROLE       PARTITIONS  SHARE  HTTP  RAFT  LABELS",
			"^n1 *  alive   non-voter  1024        25.0%  h1    r1    -",
			"^n2    down    leader     3072        75.0%  h2    r2    -",
		}, "", "GET /v1/cluster Bearer secret"},
		{"json", []string{"cluster", "-o", "json"}, 0, []string{`"voter": false`, `"partitions": 3072`, `"applied_index": 99`}, "", "GET /v1/cluster"},
		{"rm", []string{"cluster", "rm", "n2"}, 0, []string{"n2\n"}, "", "DELETE /v1/cluster/members/n2 Bearer secret"},
		{"rm goes on past a failure", []string{"cluster", "rm", "ghost", "n2", "--token", "other"}, 125, []string{"n2\n"},
			`sandgate cluster: not_found: member "ghost" not found`,
			"DELETE /v1/cluster/members/ghost Bearer other \nDELETE /v1/cluster/members/n2 Bearer other"},
		{"rm without an id", []string{"cluster", "rm"}, 125, nil, "rm needs the ID", ""},
		{"drain", []string{"cluster", "drain", "n2"}, 0, []string{"n2\n"}, "", "POST /v1/cluster/members/n2/drain Bearer secret"},
		{"drain goes on past a failure", []string{"cluster", "drain", "ghost", "n2"}, 125, []string{"n2\n"},
			`sandgate cluster: not_found: member "ghost" not found`,
			"POST /v1/cluster/members/ghost/drain Bearer secret \nPOST /v1/cluster/members/n2/drain Bearer secret"},
		{"drain without an id", []string{"cluster", "drain"}, 125, nil, "drain needs the ID", ""},
		{"unknown argument", []string{"cluster", "remove", "n2"}, 125, nil, `unknown argument "remove"`, ""},
		{"unknown format", []string{"cluster", "-o", "yaml"}, 125, nil, `unknown output format "yaml"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, g := runCLI(t, nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || tt.stderr == "" && r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.stderr)
			}
			for _, w := range tt.stdout {
				if line, ok := strings.CutPrefix(w, "^"); ok {
					if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `\s*$`).MatchString(r.stdout) {
						t.Errorf("stdout lacks the line %q:\n%s", line, r.stdout)
					}
				} else if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if tt.stdout == nil && r.stdout != "" {
				t.Errorf("stdout %q, want none", r.stdout)
			}
			if got := g.requests(); !strings.Contains(got, tt.requests) || tt.requests == "" && got != "" {
				t.Errorf("requests %q, want %q", got, tt.requests)
			}
		})
	}
}

// TestClusterCLIServe: `sandgate cluster` against a real one-node `sandgate serve`.
func TestClusterCLIServe(t *testing.T) {
	const tok = "cluster-token"
	n := startNode(t, tok)

	out, errOut, code := n.cli(t, tok, "cluster")
	if code != 0 || errOut != "" {
		t.Fatalf("cluster: %d %q %q", code, out, errOut)
	}
	for _, want := range []string{
		"node e2e, leader e2e, term ", "lease valid until ", "1 members, 1 voters; 4096 partitions\n",
		"\ne2e *  alive   leader  4096        100.0%  " + n.addr,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = n.cli(t, tok, "cluster", "--json")
	var cl sdk.Cluster
	if err := json.Unmarshal([]byte(out), &cl); err != nil || code != 0 {
		t.Fatalf("cluster --json: %d %v %q", code, err, out)
	}
	if cl.Node != "e2e" || cl.Leader != "e2e" || cl.Partitions != 4096 || cl.Unassigned != 0 || !cl.Lease.Valid ||
		len(cl.Members) != 1 || !cl.Members[0].Voter || cl.Members[0].Partitions != 4096 || cl.AppliedIndex == 0 {
		t.Fatalf("cluster --json: %+v", cl)
	}

	// The request reaches the server, which answers with an API error for a member
	// it does not have (or, on a node without clustering, that it cannot).
	_, errOut, code = n.cli(t, tok, "cluster", "rm", "ghost")
	if code != exitSandgate || !regexp.MustCompile(`^sandgate cluster: [a-z_]+: `).MatchString(errOut) {
		t.Fatalf("cluster rm ghost: %d %q", code, errOut)
	}
}
