package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// nonSandboxRoutes are the routes without a {sb}, each with how tenancy applies to it
// and the test that checks it. A route added without a {sb} fails
// TestTenantSandboxRoutesAre404 until it is listed here.
var nonSandboxRoutes = map[string]string{
	"GET /healthz":                        "public",
	"GET /metrics":                        "any token: TestTenantAdminOnlyRoutes",
	"GET /v1/openapi.json":                "the same document for every token",
	"POST /v1/sandboxes":                  "the caller's tenant owns it: TestTenantCreate, TestTenantSandboxCap",
	"GET /v1/sandboxes":                   "filtered: TestTenantListsFiltered",
	"GET /v1/whoami":                      "the caller itself: TestTenantWhoami",
	"GET /v1/cluster":                     "any token: TestTenantAdminOnlyRoutes",
	"POST /v1/cluster/join":               "admin only: TestTenantAdminOnlyRoutes",
	"DELETE /v1/cluster/members/{id}":     "admin only: TestTenantAdminOnlyRoutes",
	"POST /v1/cluster/members/{id}/drain": "admin only: TestTenantAdminOnlyRoutes",
	"GET /v1/cluster/secret":              "admin only: TestTenantAdminOnlyRoutes",
	"POST /v1/cluster/tokens":             "admin only: TestTenantAdminOnlyRoutes",
	"POST /v1/cluster/pins":               "admin only: TestTenantAdminOnlyRoutes",
}

var wsUpgrade = map[string]string{
	"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
	"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}

// raw sends one request with token (in the header, or as ?token= when query is set)
// and extra headers, bounded by a deadline. A stream's body is not read: a refused
// request has none.
func (ts *testServer) raw(token, method, path string, body any, headers map[string]string, query bool) response {
	ts.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	if query {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "token=" + url.QueryEscape(token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if !query {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := response{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusSwitchingProtocols && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	return r
}

func (r response) errorMessage(t testing.TB) string {
	t.Helper()
	var e errorBody
	r.json(t, &e)
	return e.Error.Message
}

// TestTenantSandboxRoutesAre404 walks the route table: on every route with a {sb},
// HTTP, SSE and WebSocket alike, one tenant's token on another tenant's sandbox gets
// the very answer a sandbox that does not exist gets (404 not_found, the same message),
// with the token in the header or in ?token=; and nothing of the owner's changes.
func TestTenantSandboxRoutesAre404(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	// globex's sandbox with one of everything a route can name.
	ts.raw(tokGlobex, "POST", "/v1/sandboxes", map[string]any{"id": "gx"}, nil, false).want(t, http.StatusCreated)
	var proc struct{ ID string }
	ts.raw(tokGlobex, "POST", "/v1/sandboxes/gx/processes", map[string]any{"command": "sleep 300"}, nil, false).
		want(t, http.StatusCreated).json(t, &proc)
	ts.raw(tokGlobex, "POST", "/v1/sandboxes/gx/sessions", map[string]any{"id": "s1"}, nil, false).want(t, http.StatusCreated)
	ts.raw(tokGlobex, "PUT", "/v1/sandboxes/gx/terminals/t1", map[string]any{}, nil, false).want(t, http.StatusCreated)
	ts.raw(tokGlobex, "POST", "/v1/sandboxes/gx/files/mkdir", map[string]any{"path": "d"}, nil, false).want(t, http.StatusNoContent)
	var msg struct{ ID any }
	ts.raw(tokGlobex, "POST", "/v1/sandboxes/gx/messages", map[string]any{"data": map[string]any{"a": 1}}, nil, false).
		want(t, http.StatusCreated).json(t, &msg)
	vars := strings.NewReplacer("{p}", proc.ID, "{s}", "s1", "{t}", "t1", "{id}", fmt.Sprint(msg.ID), "{ptyID}", proc.ID)

	// Were a request to get through, a DELETE would hide what the routes after it do:
	// they go last, the sandbox's own last of all.
	routes := slices.Clone(ts.srv.routes)
	rank := func(rt route) int {
		switch {
		case rt.pattern == "DELETE "+sbPath:
			return 2
		case strings.HasPrefix(rt.pattern, "DELETE "):
			return 1
		}
		return 0
	}
	slices.SortStableFunc(routes, func(a, b route) int { return rank(a) - rank(b) })
	walked := 0
	for _, rt := range routes {
		if !strings.Contains(rt.pattern, "{sb}") {
			if _, ok := nonSandboxRoutes[rt.pattern]; !ok {
				t.Errorf("route %q names no sandbox and is not in nonSandboxRoutes: decide how tenancy applies to it, test that, and list it", rt.pattern)
			}
			continue
		}
		walked++
		method, pattern, _ := strings.Cut(rt.pattern, " ")
		pattern = vars.Replace(pattern)
		if strings.Contains(strings.ReplaceAll(pattern, "{sb}", ""), "{") {
			t.Errorf("route %q has a path variable this test cannot fill: teach it", rt.pattern)
			continue
		}
		foreign := strings.ReplaceAll(pattern, "{sb}", "gx")
		absent := strings.ReplaceAll(pattern, "{sb}", "nosuch")
		if strings.HasSuffix(foreign, "/files") {
			foreign, absent = foreign+"?path=d", absent+"?path=d"
		}
		var headers map[string]string
		if strings.HasSuffix(foreign, "/ws") || strings.HasSuffix(foreign, "/connect") {
			headers = wsUpgrade
		}
		var body any
		if method == "POST" || method == "PUT" {
			body = map[string]any{}
		}
		queries := []bool{false}
		if rt.queryToken {
			queries = append(queries, true)
		}
		for _, query := range queries {
			t.Run(fmt.Sprintf("%s query=%v", rt.pattern, query), func(t *testing.T) {
				got := ts.raw(tokAcme, method, foreign, body, headers, query)
				if got.status != http.StatusNotFound || got.errorCode(t) != codeNotFound {
					t.Fatalf("acme on globex's sandbox: %d %s, want 404 not_found", got.status, got.body)
				}
				want := ts.raw(tokAcme, method, absent, body, headers, query)
				if want.status != got.status || want.errorCode(t) != got.errorCode(t) ||
					strings.ReplaceAll(got.errorMessage(t), `"gx"`, `"nosuch"`) != want.errorMessage(t) {
					t.Fatalf("a foreign sandbox is told apart from an absent one:\n%d %s\n%d %s", got.status, got.body, want.status, want.body)
				}
			})
		}
	}
	if walked < 30 {
		t.Fatalf("walked %d sandbox routes; the route table has more", walked)
	}

	// Nothing of globex's was touched: the delete, kill, exec and writes were refused.
	var sb sandboxJSON
	ts.raw(tokGlobex, "GET", "/v1/sandboxes/gx", nil, nil, false).want(t, http.StatusOK).json(t, &sb)
	if sb.Counts.Processes < 2 || sb.Counts.Sessions != 1 || sb.Counts.Terminals != 1 {
		t.Fatalf("globex's sandbox changed: %+v", sb.Counts)
	}
	var p struct{ Status string }
	ts.raw(tokGlobex, "GET", "/v1/sandboxes/gx/processes/"+proc.ID, nil, nil, false).want(t, http.StatusOK).json(t, &p)
	if p.Status != "running" {
		t.Fatalf("globex's process: %s", p.Status)
	}
	// The owner and an admin reach it, WebSocket included.
	for _, tok := range []string{tokGlobex, testAdminToken} {
		ts.raw(tok, "GET", "/v1/sandboxes/gx/terminals/t1", nil, nil, false).want(t, http.StatusOK)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.url, "http")+"/v1/sandboxes/gx/terminals/t1/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
		cancel()
		if err != nil {
			t.Fatalf("%s attaches to the terminal: %v", tok, err)
		}
		c.CloseNow()
	}
}

// want fails the test unless r has status.
func (r response) want(t testing.TB, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d %s, want %d", r.status, r.body, status)
	}
	return r
}

func sandboxIDs(t testing.TB, r response) []string {
	t.Helper()
	var list struct{ Sandboxes []sandboxJSON }
	r.json(t, &list)
	var ids []string
	for _, sb := range list.Sandboxes {
		ids = append(ids, sb.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestTenantListsFiltered: a tenant's list holds its own sandboxes only, label filters
// included; an admin lists every tenant's.
func TestTenantListsFiltered(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	for _, c := range []struct{ tok, id string }{{tokAcme, "a1"}, {tokAcme, "a2"}, {tokGlobex, "g1"}, {testAdminToken, "ops1"}} {
		ts.raw(c.tok, "POST", "/v1/sandboxes", map[string]any{"id": c.id, "labels": map[string]string{"team": "x"}}, nil, false).
			want(t, http.StatusCreated)
	}
	tests := []struct {
		name, token, query string
		want               []string
	}{
		{"acme", tokAcme, "", []string{"a1", "a2"}},
		{"acme by label", tokAcme, "?label=team=x", []string{"a1", "a2"}},
		{"globex", tokGlobex, "", []string{"g1"}},
		{"a tenant with none", testToken, "", nil},
		{"admin sees all", testAdminToken, "?label=team=x", []string{"a1", "a2", "g1", "ops1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sandboxIDs(t, ts.raw(tt.token, "GET", "/v1/sandboxes"+tt.query, nil, nil, false).want(t, http.StatusOK))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("listed %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTenantCreate: a sandbox belongs to its creator's tenant (an admin's to the
// admin's); an id another tenant owns is 409 that does not say whose, for identical
// settings too; an admin reaches every sandbox.
func TestTenantCreate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	var sb sandboxJSON
	ts.raw(tokGlobex, "POST", "/v1/sandboxes", map[string]any{"id": "taken"}, nil, false).want(t, http.StatusCreated).json(t, &sb)
	if sb.Tenant != "globex" {
		t.Fatalf("tenant %q", sb.Tenant)
	}
	for _, tok := range []string{tokAcme, testAdminToken} {
		r := ts.raw(tok, "POST", "/v1/sandboxes", map[string]any{"id": "taken"}, nil, false).want(t, http.StatusConflict)
		if r.errorCode(t) != codeConflict || r.errorMessage(t) != `sandbox id "taken" is not available` {
			t.Fatalf("%s creating another tenant's id: %s", tok, r.body)
		}
	}
	ts.raw(tokGlobex, "POST", "/v1/sandboxes", map[string]any{"id": "taken"}, nil, false).want(t, http.StatusOK)

	ts.raw(testAdminToken, "POST", "/v1/sandboxes", map[string]any{"id": "ops"}, nil, false).want(t, http.StatusCreated).json(t, &sb)
	if sb.Tenant != "admin" {
		t.Fatalf("an admin's sandbox belongs to %q", sb.Tenant)
	}
	ts.raw(tokGlobex, "GET", "/v1/sandboxes/ops", nil, nil, false).want(t, http.StatusNotFound)
	// The admin works in globex's sandbox and deletes it; then it is gone for all.
	ts.raw(testAdminToken, "POST", "/v1/sandboxes/taken/exec", map[string]any{"command": "true"}, nil, false).want(t, http.StatusOK)
	ts.raw(testAdminToken, "DELETE", "/v1/sandboxes/taken", nil, nil, false).want(t, http.StatusNoContent)
	ts.raw(tokGlobex, "GET", "/v1/sandboxes/taken", nil, nil, false).want(t, http.StatusNotFound)
	// A deleted id is free for any tenant.
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "taken"}, nil, false).want(t, http.StatusCreated)
	ts.raw(tokGlobex, "GET", "/v1/sandboxes/taken", nil, nil, false).want(t, http.StatusNotFound)
}

// TestTenantAdminOnlyRoutes: only an admin token changes cluster membership (403
// first, before the body is looked at); any token reads /v1/cluster and /metrics.
func TestTenantAdminOnlyRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	join := map[string]any{"id": "n2", "raft_addr": "127.0.0.1:1", "http_addr": "127.0.0.1:2"}
	tests := []struct {
		name, method, path string
		body               any
	}{
		{"join", "POST", "/v1/cluster/join", join},
		{"join with a bad body", "POST", "/v1/cluster/join", map[string]any{"nope": 1}},
		{"remove", "DELETE", "/v1/cluster/members/n2", nil},
		{"drain", "POST", "/v1/cluster/members/n2/drain", nil},
		{"secret", "GET", "/v1/cluster/secret", nil},
		{"tokens", "POST", "/v1/cluster/tokens", map[string]any{"tokens": []any{map[string]any{"sha256": strings.Repeat("ab", 32), "tenant": "evil", "admin": true}}}},
		{"pins", "POST", "/v1/cluster/pins", map[string]any{"sandbox": "x1", "selector": map[string]string{"zone": "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tok := range []string{testToken, tokAcme} {
				r := ts.raw(tok, tt.method, tt.path, tt.body, nil, false).want(t, http.StatusForbidden)
				if r.errorCode(t) != codeForbidden {
					t.Fatalf("%s: %s", tok, r.body)
				}
			}
		})
	}
	// The admin passes the check.
	ts.raw(testAdminToken, "DELETE", "/v1/cluster/members/n2", nil, nil, false).want(t, http.StatusNotFound)
	ts.raw(testAdminToken, "POST", "/v1/cluster/members/n2/drain", nil, nil, false).want(t, http.StatusNotFound)
	ts.raw(testAdminToken, "POST", "/v1/cluster/members/n2/drain", map[string]any{"nope": 1}, nil, false).want(t, http.StatusBadRequest)
	ts.raw(testAdminToken, "GET", "/v1/cluster/secret", nil, nil, false).want(t, http.StatusOK)
	ts.raw(testAdminToken, "GET", "/metrics", nil, nil, false).want(t, http.StatusOK)
	ts.raw(tokAcme, "GET", "/v1/cluster", nil, nil, false).want(t, http.StatusOK)
	ts.raw(tokAcme, "GET", "/metrics", nil, nil, false).want(t, http.StatusOK)
}

// TestTenantWhoami: the token's tenant, admin-ness and sandbox count.
func TestTenantWhoami(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{maxPerTenant: 7})
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "w1"}, nil, false).want(t, http.StatusCreated)
	tests := []struct {
		token string
		want  whoamiJSON
	}{
		{tokAcme, whoamiJSON{Tenant: "acme", Sandboxes: 1, Max: 7}},
		{tokGlobex, whoamiJSON{Tenant: "globex", Max: 7}},
		{testAdminToken, whoamiJSON{Tenant: "admin", Admin: true, Max: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.want.Tenant, func(t *testing.T) {
			var got whoamiJSON
			ts.raw(tt.token, "GET", "/v1/whoami", nil, nil, false).want(t, http.StatusOK).json(t, &got)
			if got != tt.want {
				t.Fatalf("whoami %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTenantSandboxCap: --max-sandboxes-per-tenant holds exactly under concurrent
// creates; past it a create is 429 budget_exceeded naming the limit, with Retry-After;
// other tenants are not counted; a delete frees a place.
func TestTenantSandboxCap(t *testing.T) {
	t.Parallel()
	const max, tries = 4, 12
	ts := newTestServer(t, &serverOptions{maxPerTenant: max})
	var wg sync.WaitGroup
	results := make([]response, tries)
	errs := make([]error, tries)
	for i := range tries {
		wg.Go(func() {
			results[i], errs[i] = ts.send(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": fmt.Sprintf("c%d", i)})
		})
	}
	wg.Wait()
	created := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch r.status {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			msg := r.errorMessage(t)
			if r.errorCode(t) != codeBudgetExceeded || !strings.Contains(msg, "max_sandboxes_per_tenant") ||
				!strings.Contains(msg, fmt.Sprint(max)) || r.header.Get("Retry-After") == "" {
				t.Fatalf("over the cap: %s (Retry-After %q)", r.body, r.header.Get("Retry-After"))
			}
		default:
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	if created != max {
		t.Fatalf("%d of %d concurrent creates succeeded, want exactly %d", created, tries, max)
	}
	if got := sandboxIDs(t, ts.raw(tokAcme, "GET", "/v1/sandboxes", nil, nil, false)); len(got) != max {
		t.Fatalf("acme has %v", got)
	}
	// Another tenant has its own count; a re-post of an existing id is not a new one.
	ts.raw(tokGlobex, "POST", "/v1/sandboxes", map[string]any{"id": "g"}, nil, false).want(t, http.StatusCreated)
	mine := sandboxIDs(t, ts.raw(tokAcme, "GET", "/v1/sandboxes", nil, nil, false))
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": mine[0]}, nil, false).want(t, http.StatusOK)
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "more"}, nil, false).want(t, http.StatusTooManyRequests)
	ts.raw(tokAcme, "DELETE", "/v1/sandboxes/"+mine[0], nil, nil, false).want(t, http.StatusNoContent)
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "more"}, nil, false).want(t, http.StatusCreated)
}

// TestTenantOwnersAcrossRestart: after a restart on the same data directory the owners
// come from storage: each tenant still has its own sandboxes only, passivated or not,
// and its count against the cap.
func TestTenantOwnersAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts, stop := startServerOn(t, dir)
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "ra"}, nil, false).want(t, http.StatusCreated)
	ts.raw(tokGlobex, "POST", "/v1/sandboxes", map[string]any{"id": "rg"}, nil, false).want(t, http.StatusCreated)
	stop()

	ts, _ = startServerOn(t, dir)
	ts.raw(tokAcme, "GET", "/v1/sandboxes/rg", nil, nil, false).want(t, http.StatusNotFound)
	ts.raw(tokGlobex, "POST", "/v1/sandboxes/ra/exec", map[string]any{"command": "true"}, nil, false).want(t, http.StatusNotFound)
	ts.raw(tokAcme, "POST", "/v1/sandboxes/ra/exec", map[string]any{"command": "true"}, nil, false).want(t, http.StatusOK)
	if got := sandboxIDs(t, ts.raw(tokGlobex, "GET", "/v1/sandboxes", nil, nil, false)); !slices.Equal(got, []string{"rg"}) {
		t.Fatalf("globex lists %v", got)
	}
	var me whoamiJSON
	ts.raw(tokAcme, "GET", "/v1/whoami", nil, nil, false).want(t, http.StatusOK).json(t, &me)
	if me.Sandboxes != 1 {
		t.Fatalf("acme's count after restart: %+v", me)
	}
	ts.raw(tokAcme, "POST", "/v1/sandboxes", map[string]any{"id": "rg"}, nil, false).want(t, http.StatusConflict)
}
