package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const ocBase = "/v1/sandboxes/oc1/opencode/pty"

// ocDo sends a request with the test token and extra headers.
func (ts *testServer) ocDo(method, path string, body any, header http.Header) response {
	ts.t.Helper()
	var rd *strings.Reader
	switch b := body.(type) {
	case nil:
		rd = strings.NewReader("")
	case string:
		rd = strings.NewReader(b)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: []byte(b.String())}
}

// ocError is an OpenCode route's error body: both shapes.
type ocError struct {
	Tag     string `json:"_tag"`
	PtyID   string `json:"ptyID"`
	Message string `json:"message"`
	Name    string `json:"name"`
	Data    struct {
		Message string `json:"message"`
	} `json:"data"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func TestOpenCodePtyLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	ts.must(http.StatusNoContent, "POST", "/v1/sandboxes/oc1/files/mkdir", map[string]any{"path": "sub/dir", "parents": true})

	// Shells: the sandbox's own, each an executable file; sh is acceptable.
	var shells []shellJSON
	ts.must(http.StatusOK, "GET", ocBase+"/shells", nil).json(t, &shells)
	var sawSh bool
	for _, sh := range shells {
		if !strings.HasPrefix(sh.Path, "/") || sh.Name == "" {
			t.Fatalf("shell %+v", sh)
		}
		if sh.Name == "sh" && sh.Acceptable {
			sawSh = true
		}
	}
	if !sawSh {
		t.Fatalf("no acceptable sh in %+v", shells)
	}

	// Create with no body fields: the preferred shell, in the workspace, titled by it.
	var p ptyJSON
	ts.must(http.StatusOK, "POST", ocBase, map[string]any{}).json(t, &p)
	if !strings.HasPrefix(p.ID, "proc_") || p.Status != "running" || p.PID <= 0 || p.ExitCode != nil ||
		p.Cwd != ts.guestWorkspace("oc1") || !strings.HasPrefix(p.Command, "/") || p.Title == "" {
		t.Fatalf("created %+v", p)
	}
	// A command with args, a cwd from the directory header (URI-encoded), a title.
	hdr := http.Header{"X-Opencode-Directory": {url.PathEscape(ts.guestWorkspace("oc1") + "/sub/dir")}, "Content-Type": {"application/json"}}
	r := ts.ocDo("POST", ocBase, `{"command":"sh","args":["-c","echo term=$TERM; read x; stty size; exit 3"],"title":"build","env":{"A":"1"}}`, hdr)
	if r.status != http.StatusOK {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var q ptyJSON
	r.json(t, &q)
	if q.Title != "build" || q.Command != "sh" || len(q.Args) != 2 || q.Cwd != ts.guestWorkspace("oc1")+"/sub/dir" {
		t.Fatalf("created %+v", q)
	}

	// List: both, and no pipe process; get one.
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/oc1/processes", map[string]any{"command": "sleep 30"})
	var list []ptyJSON
	ts.must(http.StatusOK, "GET", ocBase, nil).json(t, &list)
	if len(list) != 2 || list[0].ID != p.ID || list[1].ID != q.ID {
		t.Fatalf("list %+v", list)
	}
	var got ptyJSON
	ts.must(http.StatusOK, "GET", ocBase+"/"+q.ID, nil).json(t, &got)
	if got.ID != q.ID || got.Title != "build" {
		t.Fatalf("get %+v", got)
	}

	// Update: size and title; the process sees the size.
	var up ptyJSON
	ts.must(http.StatusOK, "PUT", ocBase+"/"+q.ID, map[string]any{"title": "renamed", "size": map[string]any{"rows": 33, "cols": 101}}).json(t, &up)
	if up.Title != "renamed" || up.ID != q.ID {
		t.Fatalf("update %+v", up)
	}
	ts.must(http.StatusNoContent, "POST", "/v1/sandboxes/oc1/processes/"+q.ID+"/input", map[string]any{"text": "\n"})
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+q.ID+"?wait_ms=20000", nil)
	out := outputOf(t, ts.readSSE("/v1/sandboxes/oc1/processes/"+q.ID+"/output", "", 20*time.Second, lastIs("exit")))
	if !strings.Contains(out, "term=xterm-256color") || !strings.Contains(out, "33 101") {
		t.Fatalf("output %q", out)
	}
	// Exited: the exit code, and the title kept; a new title sticks to the record.
	ts.must(http.StatusOK, "GET", ocBase+"/"+q.ID, nil).json(t, &got)
	if got.Status != "exited" || got.ExitCode == nil || *got.ExitCode != 3 || got.Title != "renamed" {
		t.Fatalf("exited %+v", got)
	}
	ts.must(http.StatusOK, "PUT", ocBase+"/"+q.ID, map[string]any{"title": "done"})
	ts.must(http.StatusOK, "GET", ocBase+"/"+q.ID, nil).json(t, &got)
	if got.Title != "done" {
		t.Fatalf("retitled exited %+v", got)
	}
	var proc processJSON
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/oc1/processes/"+q.ID, nil).json(t, &proc)
	if proc.Label == nil || *proc.Label != "done" {
		t.Fatalf("process label %v", proc.Label)
	}

	// Remove: true, and the process is gone.
	r = ts.must(http.StatusOK, "DELETE", ocBase+"/"+p.ID, nil)
	if strings.TrimSpace(string(r.body)) != "true" {
		t.Fatalf("remove body %s", r.body)
	}
	ts.must(http.StatusNotFound, "GET", "/v1/sandboxes/oc1/processes/"+p.ID, nil)
}

func TestOpenCodeErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("oc1")
	var pipe processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/oc1/processes", map[string]any{"command": "sleep 30"}).json(t, &pipe)
	outside := url.PathEscape("/etc")
	cases := []struct {
		name, method, path, body string
		header                   http.Header
		status                   int
		tag, code                string
	}{
		{"unknown pty", "GET", ocBase + "/proc_nope", "", nil, 404, "PtyNotFoundError", "not_found"},
		{"pipe process is no pty", "GET", ocBase + "/" + pipe.ID, "", nil, 404, "PtyNotFoundError", "not_found"},
		{"remove unknown", "DELETE", ocBase + "/proc_nope", "", nil, 404, "PtyNotFoundError", "not_found"},
		{"update unknown", "PUT", ocBase + "/proc_nope", `{"title":"x"}`, nil, 404, "PtyNotFoundError", "not_found"},
		{"token for unknown", "POST", ocBase + "/proc_nope/connect-token", "", nil, 404, "PtyNotFoundError", "not_found"},
		{"unknown field", "POST", ocBase, `{"cmd":"sh"}`, nil, 400, "InvalidRequestError", "invalid_argument"},
		{"bad size", "PUT", ocBase + "/proc_nope", `{"size":{"rows":0,"cols":10}}`, nil, 400, "InvalidRequestError", "invalid_argument"},
		{"directory query outside", "GET", ocBase + "?directory=" + outside, "", nil, 400, "InvalidRequestError", "invalid_argument"},
		{"directory header outside", "POST", ocBase, `{}`, http.Header{"X-Opencode-Directory": {outside}}, 400, "InvalidRequestError", "invalid_argument"},
		{"directory dotdot", "GET", ocBase + "/shells?directory=..", "", nil, 400, "InvalidRequestError", "invalid_argument"},
		{"directory missing", "GET", ocBase + "?directory=nope", "", nil, 400, "InvalidRequestError", "invalid_argument"},
		{"unknown sandbox stays sandgate's", "GET", "/v1/sandboxes/nope/opencode/pty", "", nil, 404, "", "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.ocDo(c.method, c.path, c.body, c.header)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			var e ocError
			r.json(t, &e)
			if e.Tag != c.tag || e.Error.Code != c.code || e.Error.Message == "" {
				t.Fatalf("body %s", r.body)
			}
			switch c.tag {
			case "PtyNotFoundError":
				if e.PtyID == "" || e.Message != `pty "`+e.PtyID+`" not found` || e.Error.Message != e.Message {
					t.Fatalf("body %s", r.body)
				}
			case "InvalidRequestError":
				if e.Name != "BadRequest" || e.Data.Message == "" || e.Message == "" {
					t.Fatalf("body %s", r.body)
				}
			}
		})
	}
	// Another tenant's sandbox is sandgate's 404, as everywhere.
	r := ts.doToken(tokAcme, "GET", ocBase, nil)
	var e ocError
	r.json(t, &e)
	if r.status != 404 || e.Tag != "" || e.Error.Code != "not_found" {
		t.Fatalf("foreign sandbox: %d %s", r.status, r.body)
	}
	if r := ts.doToken("", "GET", ocBase, nil); r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
}

func TestOpenCodeCORS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.AllowedOrigins = []string{"app.example"} }})
	ts.sandbox("oc1")
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", ts.url+ocBase, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-opencode-directory")
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, origin := range []string{"https://app.example", ts.url} {
		resp := preflight(origin)
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "PUT") || !strings.Contains(h.Get("Vary"), "Origin") {
			t.Fatalf("preflight from %s: %d %v", origin, resp.StatusCode, h)
		}
		for _, want := range []string{"authorization", "content-type", "x-opencode-directory", "x-opencode-workspace"} {
			if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
				t.Fatalf("allowed headers %q lack %s", h.Get("Access-Control-Allow-Headers"), want)
			}
		}
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from a foreign page: %d %v", resp.StatusCode, resp.Header)
	}
	// Requests: the grant for an allowed page only, on errors too.
	for origin, grant := range map[string]bool{"https://app.example": true, "https://evil.example": false} {
		r := ts.ocDo("GET", ocBase, nil, http.Header{"Origin": {origin}})
		if r.status != http.StatusOK || (r.header.Get("Access-Control-Allow-Origin") == origin) != grant {
			t.Fatalf("GET from %s: %d %v", origin, r.status, r.header)
		}
		r = ts.ocDo("GET", ocBase+"/proc_nope", nil, http.Header{"Origin": {origin}})
		if r.status != http.StatusNotFound || (r.header.Get("Access-Control-Allow-Origin") == origin) != grant {
			t.Fatalf("404 from %s: %d %v", origin, r.status, r.header)
		}
	}
	// Other subtrees get no CORS.
	r := ts.ocDo("GET", "/v1/sandboxes/oc1", nil, http.Header{"Origin": {"https://app.example"}})
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS outside the subtree: %v", r.header)
	}
}
