package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/sandgate/sandgate/actor"
)

func TestSandboxLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	body := map[string]any{"id": "dev1", "labels": map[string]string{"tenant": "acme"}, "env": map[string]string{"A": "1"}}
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", body).json(t, &sb)
	if sb.ID != "dev1" || sb.State != "running" || sb.Node != "n1" || sb.Labels["tenant"] != "acme" {
		t.Fatalf("created %+v", sb)
	}
	if sb.Budget.MaxProcesses == 0 || sb.Budget.OutputBufferBytes == 0 || sb.CreatedAt.IsZero() {
		t.Fatalf("budget or times missing: %+v", sb)
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes", body)
	body["labels"] = map[string]string{"tenant": "other"}
	if r := ts.do("POST", "/v1/sandboxes", body); r.status != http.StatusConflict || r.errorCode(t) != codeConflict {
		t.Fatalf("different settings: %d %s", r.status, r.body)
	}

	var made sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", nil).json(t, &made)
	if !strings.HasPrefix(made.ID, "sb_") {
		t.Fatalf("server-made id %q", made.ID)
	}

	var list struct{ Sandboxes []sandboxJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes?label=tenant=acme", nil).json(t, &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].ID != "dev1" {
		t.Fatalf("label filter: %+v", list)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes", nil).json(t, &list)
	if len(list.Sandboxes) != 2 {
		t.Fatalf("list all: %d sandboxes", len(list.Sandboxes))
	}
	if r := ts.do("GET", "/v1/sandboxes?label=novalue", nil); r.status != http.StatusBadRequest {
		t.Fatalf("bad label filter: %d", r.status)
	}

	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/dev1", nil)
	if r := ts.do("GET", "/v1/sandboxes/dev1", nil); r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
		t.Fatalf("after delete: %d %s", r.status, r.body)
	}
	if r := ts.do("DELETE", "/v1/sandboxes/dev1", nil); r.status != http.StatusNotFound {
		t.Fatalf("second delete: %d", r.status)
	}
}

func TestStrictJSON(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	tests := []struct {
		name, body string
		status     int
	}{
		{"unknown field", `{"idd":"x"}`, http.StatusBadRequest},
		{"wrong type", `{"id":5}`, http.StatusBadRequest},
		{"trailing data", `{"id":"x"}{}`, http.StatusBadRequest},
		{"malformed", `{"id":`, http.StatusBadRequest},
		{"empty id", `{"id":""}`, http.StatusBadRequest},
		{"upper-case id", `{"id":"Dev1"}`, http.StatusBadRequest},
		{"id of 64", `{"id":"` + strings.Repeat("a", 64) + `"}`, http.StatusBadRequest},
		{"id starting with a dash", `{"id":"-a"}`, http.StatusBadRequest},
		{"too large", `{"labels":{"a":"` + strings.Repeat("x", 2<<20) + `"}}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", "/v1/sandboxes", tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			want := codeInvalidArgument
			if tt.status == http.StatusRequestEntityTooLarge {
				want = codeTooLarge
			}
			if got := r.errorCode(t); got != want {
				t.Fatalf("code %q, want %q", got, want)
			}
		})
	}
}

// TestBudgetAndExpiry: a sandbox past its process budget is refused with 429, and past
// its max duration it expires (410). The duration leaves the setup time on a loaded
// machine before it runs out.
func TestBudgetAndExpiry(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{limits: actor.Budget{MaxProcesses: 2, MaxDuration: 4 * time.Second}})
	ts.sandbox("b1")
	for i := 0; i < 2; i++ {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/b1/processes", map[string]any{"command": "sleep 30"})
	}
	r := ts.do("POST", "/v1/sandboxes/b1/processes", map[string]any{"command": "sleep 30"})
	if r.status != http.StatusTooManyRequests || r.errorCode(t) != codeBudgetExceeded || r.header.Get("Retry-After") == "" {
		t.Fatalf("third process: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	eventually(t, 20*time.Second, "sandbox to expire", func() bool {
		var sb sandboxJSON
		ts.must(http.StatusOK, "GET", "/v1/sandboxes/b1", nil).json(t, &sb)
		return sb.State == "expired"
	})
	r = ts.do("POST", "/v1/sandboxes/b1/exec", map[string]any{"command": "true"})
	if r.status != http.StatusGone || r.errorCode(t) != codeExpired {
		t.Fatalf("exec on expired: %d %s", r.status, r.body)
	}
}

// TestExpiredSandboxReads: an expired sandbox accepts no new work (410 expired), but
// what it has is still read: a GET of its terminal shows the terminal as it is (it was
// 410, since a GET restarts a stopped shell), while an attach, which would, stays 410.
func TestExpiredSandboxReads(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{limits: actor.Budget{MaxDuration: 4 * time.Second}})
	ts.sandbox("x1")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/x1/terminals/t1", map[string]any{})
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/x1/sessions", map[string]any{"id": "s1"})
	eventually(t, 20*time.Second, "sandbox to expire", func() bool {
		var sb sandboxJSON
		ts.must(http.StatusOK, "GET", "/v1/sandboxes/x1", nil).json(t, &sb)
		return sb.State == "expired"
	})
	tests := []struct {
		name, method, path string
		want               int
	}{
		{"get terminal", "GET", "/v1/sandboxes/x1/terminals/t1", http.StatusOK},
		{"list terminals", "GET", "/v1/sandboxes/x1/terminals", http.StatusOK},
		{"get session", "GET", "/v1/sandboxes/x1/sessions/s1", http.StatusOK},
		{"unknown terminal", "GET", "/v1/sandboxes/x1/terminals/t2", http.StatusNotFound},
		{"put terminal", "PUT", "/v1/sandboxes/x1/terminals/t1", http.StatusGone},
		{"session exec", "POST", "/v1/sandboxes/x1/sessions/s1/exec", http.StatusGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.method != "GET" {
				body = map[string]any{"command": "true"}
				if tt.method == "PUT" {
					body = map[string]any{}
				}
			}
			r := ts.do(tt.method, tt.path, body)
			if r.status != tt.want {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.want)
			}
		})
	}
	var term terminalJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/x1/terminals/t1", nil).json(t, &term)
	if term.ID != "t1" || term.Status != "exited" {
		t.Fatalf("terminal of an expired sandbox: %+v", term)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+"/v1/sandboxes/x1/terminals/t1/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err == nil {
		c.CloseNow()
		t.Fatal("attached to a terminal of an expired sandbox")
	}
	if resp == nil || resp.StatusCode != http.StatusGone {
		t.Fatalf("attach to a terminal of an expired sandbox: %v %v, want 410", resp, err)
	}
}

// denyPolicy denies commands containing "forbidden" and places sandboxes by label.
type denyPolicy struct{}

func (denyPolicy) Route(_ context.Context, r RouteRequest) RouteDecision {
	if strings.Contains(strings.Join(r.Command, " "), "forbidden") {
		return RouteDecision{Reason: "blocked by test: forbidden"}
	}
	if r.Route == "POST /v1/sandboxes" && r.Labels["pool"] != "" {
		return RouteDecision{Allow: true, Pool: map[string]string{"pool": r.Labels["pool"]}}
	}
	return RouteDecision{Allow: true}
}

func TestRoutePolicy(t *testing.T) {
	t.Parallel()
	// The node is in pool gpu: a sandbox may only be placed on a node its pool matches.
	ts := newTestServer(t, &serverOptions{policy: denyPolicy{}, config: func(c *Config) { c.Labels = map[string]string{"pool": "gpu"} }})
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "p1", "labels": map[string]string{"pool": "gpu"}}).json(t, &sb)
	if sb.Pool["pool"] != "gpu" {
		t.Fatalf("pool not recorded: %+v", sb)
	}
	if r := ts.do("POST", "/v1/sandboxes", map[string]any{"id": "p2", "labels": map[string]string{"pool": "tpu"}}); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "pool=tpu") {
		t.Fatalf("a pool no node matches: %d %s, want 503 naming pool=tpu", r.status, r.body)
	}
	r := ts.do("POST", "/v1/sandboxes/p1/exec", map[string]any{"command": "echo forbidden"})
	if r.status != http.StatusForbidden || r.errorCode(t) != codeForbidden || !strings.Contains(string(r.body), "blocked by test") {
		t.Fatalf("denied exec: %d %s", r.status, r.body)
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/p1/exec", map[string]any{"command": "echo fine"})
}

func TestClusterSingleNode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	var info struct {
		Node, Leader string
		Members      []clusterMemberJSON
	}
	ts.must(http.StatusOK, "GET", "/v1/cluster", nil).json(t, &info)
	if info.Node != "n1" || info.Leader != "n1" || len(info.Members) != 1 || info.Members[0].Status != "alive" {
		t.Fatalf("cluster: %+v", info)
	}
	if !info.Members[0].Voter {
		t.Fatalf("the only member is not a voter: %+v", info)
	}
	// The last voter cannot leave: no quorum would be left.
	r := ts.doToken(testAdminToken, "DELETE", "/v1/cluster/members/n1", nil)
	if r.status != http.StatusConflict || r.errorCode(t) != codeConflict {
		t.Fatalf("removing the last voter: %d %s", r.status, r.body)
	}
	// A member is addressed by its id (DELETE /v1/cluster/members/{id}), so a join
	// under an id that is no valid id is refused before anything changes.
	r = ts.doToken(testAdminToken, "POST", "/v1/cluster/join", map[string]any{"id": "Ghost!", "raft_addr": "127.0.0.1:9", "http_addr": "127.0.0.1:9"})
	if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(r.body), "member id") {
		t.Fatalf("join under a bad id: %d %s", r.status, r.body)
	}
}

// createIDPolicy records the sandbox ids it is asked about at create.
type createIDPolicy struct {
	mu  sync.Mutex
	ids []string
}

func (p *createIDPolicy) Route(_ context.Context, r RouteRequest) RouteDecision {
	if r.Route == "POST /v1/sandboxes" {
		p.mu.Lock()
		p.ids = append(p.ids, r.Sandbox)
		p.mu.Unlock()
	}
	return RouteDecision{Allow: true}
}

// TestRoutePolicySeesCreateID: the policy is told the sandbox id at create too: the
// caller's, or the server-made one the sandbox then gets.
func TestRoutePolicySeesCreateID(t *testing.T) {
	t.Parallel()
	p := &createIDPolicy{}
	ts := newTestServer(t, &serverOptions{policy: p})
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": "named"})
	var sb sandboxJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{}).json(t, &sb)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) != 2 || p.ids[0] != "named" || p.ids[1] != sb.ID || !strings.HasPrefix(sb.ID, "sb_") {
		t.Fatalf("policy saw ids %q; want named and the made id %q", p.ids, sb.ID)
	}
}
