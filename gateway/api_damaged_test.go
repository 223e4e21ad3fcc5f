package gateway

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/actor/actortest"
)

// TestDamagedSandboxAnswers503: after a restart on an actors.db with a damaged page
// under one sandbox's records, the server starts; that sandbox answers 503 unavailable
// with Retry-After and a message saying its stored state could not be read; the other
// sandboxes read, write, list and delete as before; /metrics counts it.
func TestDamagedSandboxAnswers503(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts, stop := startServerOn(t, dir)
	pad := map[string]any{"type": "agent.pad", "data": map[string]string{"pad": strings.Repeat("x", 2000)}}
	for _, id := range []string{"a1", "b2", "zz-victim"} { // the victim sorts last
		ts.sandbox(id)
		events := 3
		if id == "zz-victim" {
			events = 20 // so that its records fill leaf pages of their own
		}
		for range events {
			ts.must(http.StatusCreated, "POST", "/v1/sandboxes/"+id+"/events", pad)
		}
	}
	stop()

	path := filepath.Join(dir, "actors.db")
	leaves, pageSize, err := actortest.BoltLeaves(path, "d")
	if err != nil {
		t.Fatal(err)
	}
	// Records are keyed "<sandbox>\x00<key>"; "m" is the sandbox record (actor/record.go).
	leaf, ok := actortest.OnlyLeafWith(leaves, []byte("zz-victim\x00"), []byte("zz-victim\x00m"))
	if !ok {
		t.Fatal("no leaf page holds zz-victim's record and nothing of other sandboxes")
	}
	if _, err := actortest.DamagePage(path, leaf.ID, pageSize); err != nil {
		t.Fatal(err)
	}

	ts, _ = startServerOn(t, dir)
	victim := []struct{ method, path string }{
		{"GET", "/v1/sandboxes/zz-victim"},
		{"GET", "/v1/sandboxes/zz-victim"},
		{"GET", "/v1/sandboxes/zz-victim/events"},
		{"POST", "/v1/sandboxes/zz-victim/exec"},
		{"DELETE", "/v1/sandboxes/zz-victim"},
	}
	for i, rq := range victim {
		t.Run(fmt.Sprintf("victim %d %s %s", i, rq.method, rq.path), func(t *testing.T) {
			var body any
			if rq.method == "POST" {
				body = map[string]any{"command": "true"}
			}
			r := ts.do(rq.method, rq.path, body)
			if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") == "" {
				t.Fatalf("status %d, Retry-After %q: %s; want 503 unavailable with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
			}
			if !strings.Contains(string(r.body), "stored state could not be read") || !strings.Contains(string(r.body), "zz-victim") {
				t.Errorf("message does not say the sandbox's stored state could not be read: %s", r.body)
			}
		})
	}

	ts.must(http.StatusOK, "GET", "/v1/sandboxes/a1", nil)
	var evs struct{ Events []any }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/b2/events", nil).json(t, &evs)
	if len(evs.Events) != 4 {
		t.Errorf("b2 has %d events, want 4", len(evs.Events))
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/a1/events", pad)
	var out struct{ Stdout string }
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/a1/exec", map[string]any{"command": "echo ok"}).json(t, &out)
	if out.Stdout != "ok\n" {
		t.Errorf("exec in a1: stdout %q", out.Stdout)
	}
	ts.sandbox("c3")
	var list struct{ Sandboxes []struct{ ID string } }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes", nil).json(t, &list)
	var ids []string
	for _, sb := range list.Sandboxes {
		ids = append(ids, sb.ID)
	}
	if fmt.Sprint(ids) != "[a1 b2 c3]" {
		t.Errorf("listed %v, want [a1 b2 c3]", ids)
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/b2", nil)

	metrics := string(ts.doToken(testAdminToken, "GET", "/metrics", nil).body)
	if !strings.Contains(metrics, "\nsandgate_storage_unreadable_sandboxes 1\n") {
		t.Errorf("/metrics does not count the damaged sandbox:\n%s", grepLines(metrics, "sandgate_storage"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
