package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// concretePath fills a route pattern's variables with valid ids.
func concretePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	r := strings.NewReplacer("{sb}", "sb1", "{p}", "proc_1", "{s}", "s1", "{t}", "t1", "{id}", "n9", "{$}", "")
	return method, r.Replace(path)
}

func TestAuthOnEveryRoute(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	for _, rt := range ts.srv.routes {
		method, path := concretePath(rt.pattern)
		t.Run(rt.pattern, func(t *testing.T) {
			for _, tok := range []string{"", "wrong-token"} {
				r := ts.doToken(tok, method, path, nil)
				if rt.public {
					if r.status == http.StatusUnauthorized {
						t.Fatalf("public route answered 401")
					}
					continue
				}
				if r.status != http.StatusUnauthorized || r.errorCode(t) != codeUnauthorized {
					t.Fatalf("token %q: status %d body %s, want 401 unauthorized", tok, r.status, r.body)
				}
			}
			// ?token= counts only where browsers need it (SSE and WebSocket routes).
			r := ts.doToken("", method, path+"?token="+testToken, nil)
			if !rt.public && !rt.queryToken && r.status != http.StatusUnauthorized {
				t.Fatalf("?token= accepted on a non-stream route: %d", r.status)
			}
			if rt.queryToken && r.status == http.StatusUnauthorized {
				t.Fatalf("?token= refused on a stream route")
			}
		})
	}
}

func TestHealthzAndUnknownRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	r := ts.doToken("", "GET", "/healthz", nil)
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != "ok" {
		t.Fatalf("healthz: %d %q", r.status, r.body)
	}
	r = ts.do("GET", "/v2/nothing", nil)
	if r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
		t.Fatalf("unknown route: %d %s", r.status, r.body)
	}
	r = ts.do("PATCH", "/v1/sandboxes", nil)
	if r.status != http.StatusMethodNotAllowed || r.errorCode(t) != codeInvalidArgument || r.header.Get("Allow") != "GET, POST" {
		t.Fatalf("wrong method: %d %s allow %q", r.status, r.body, r.header.Get("Allow"))
	}
	// Under /v1 the token comes first: without it, a wrong method or an unknown path is
	// 401 like every other API request.
	for _, req := range [][2]string{{"PUT", "/v1/sandboxes"}, {"GET", "/v1/nothing"}, {"GET", "/v1"}} {
		if r := ts.doToken("", req[0], req[1], nil); r.status != http.StatusUnauthorized || r.errorCode(t) != codeUnauthorized {
			t.Fatalf("%s %s without a token: %d %s", req[0], req[1], r.status, r.body)
		}
	}
	// A path not in canonical form (an empty id makes "//") is an unknown route in the
	// error shape, not net/http's redirect.
	if r := ts.doToken("", "GET", "/v1//sandboxes", nil); r.status != http.StatusUnauthorized || r.errorCode(t) != codeUnauthorized {
		t.Fatalf("// without a token: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1//sandboxes", "/v1/sandboxes/m1/processes//output", "/v1/sandboxes/./m1", "/v1/sandboxes/m1/../m2"} {
		if r := ts.do("GET", p, nil); r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
			t.Fatalf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	ts.sandbox("m1")
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/m1/terminals/t1", map[string]any{})
	r = ts.doToken(testAdminToken, "GET", "/metrics", nil)
	for _, want := range []string{
		`sandgate_http_requests_total{code="201",route="PUT /v1/sandboxes/{sb}/terminals/{t}"} 1`,
		"sandgate_http_request_duration_seconds_bucket", "sandgate_active_sandboxes 1",
		"sandgate_terminals 1", "sandgate_websocket_clients 0", "sandgate_streamed_bytes_total",
	} {
		if r.status != http.StatusOK || !strings.Contains(string(r.body), want) {
			t.Fatalf("metrics (%d) lack %q", r.status, want)
		}
	}
}

func TestInvalidIDs(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("sb1") // a bad id in a body or query of a sandbox that exists
	tests := []struct {
		name, method, path string
		body               any
		says               string // what the message names
	}{
		{"upper case sandbox in path", "GET", "/v1/sandboxes/Bad", nil, "sandbox id"},
		{"sandbox id in body", "POST", "/v1/sandboxes", map[string]any{"id": "-bad"}, "sandbox id"},
		{"too long", "GET", "/v1/sandboxes/" + strings.Repeat("a", 64), nil, "sandbox id"},
		{"process id", "GET", "/v1/sandboxes/sb1/processes/Proc.1", nil, "process id"},
		{"session id in body", "POST", "/v1/sandboxes/sb1/sessions", map[string]any{"id": "a b"}, "session id"},
		{"terminal id", "PUT", "/v1/sandboxes/sb1/terminals/T1", map[string]any{}, "terminal id"},
		{"session id in a filter", "GET", "/v1/sandboxes/sb1/processes?session=BAD!", nil, "session id"},
		{"message id", "DELETE", "/v1/sandboxes/sb1/messages/BAD", nil, "message id"},
		{"member id", "DELETE", "/v1/cluster/members/BAD", nil, "member id"},
		{"empty label key", "POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"": "v"}}, "label key"},
		{"label key with =", "POST", "/v1/sandboxes", map[string]any{"labels": map[string]string{"a=b": "v"}}, "label key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
				t.Fatalf("status %d %s, want 400 invalid_argument", r.status, r.body)
			}
			if !strings.Contains(string(r.body), tt.says) {
				t.Fatalf("message %s does not name the %s", r.body, tt.says)
			}
		})
	}
}

// TestOpenAPIWithoutToken: the OpenAPI document is served without a token, so that a
// client generator can fetch it from a running server.
func TestOpenAPIWithoutToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	r := ts.doToken("", "GET", "/v1/openapi.json", nil)
	var doc struct{ OpenAPI string }
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json without a token: %d %s", r.status, r.body)
	}
	r.json(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("not an OpenAPI document: %.200s", r.body)
	}
}
