package webui

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func builtFS() fstest.MapFS {
	big := strings.Repeat("console.log('sandgate');\n", 200)
	return fstest.MapFS{
		".gitkeep":            {Data: nil},
		"index.html":          {Data: []byte("<!doctype html><title>dashboard</title>")},
		"terminal.html":       {Data: []byte("<!doctype html><title>terminal</title>")},
		"assets/terminal.js":  {Data: []byte(big)},
		"assets/terminal.css": {Data: []byte("body{}")},
	}
}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestBuiltRoutes(t *testing.T) {
	t.Parallel()
	h := newHandler(builtFS())
	tests := []struct {
		name     string
		method   string
		target   string
		status   int
		contains string
		ctype    string
	}{
		{name: "dashboard", method: "GET", target: "/", status: 200, contains: "dashboard", ctype: "text/html; charset=utf-8"},
		{name: "dashboard head", method: "HEAD", target: "/", status: 200, ctype: "text/html; charset=utf-8"},
		{name: "terminal page", method: "GET", target: "/t/dev1/main", status: 200, contains: "terminal", ctype: "text/html; charset=utf-8"},
		{name: "terminal page with query", method: "GET", target: "/t/sb_9f2c/term-1?token=x", status: 200, contains: "terminal"},
		{name: "bad sandbox id", method: "GET", target: "/t/Dev1/main", status: 404},
		{name: "bad terminal id", method: "GET", target: "/t/dev1/-x", status: 404},
		{name: "terminal page needs two ids", method: "GET", target: "/t/dev1", status: 404},
		{name: "terminal page has no subpaths", method: "GET", target: "/t/dev1/main/x", status: 404},
		{name: "script", method: "GET", target: "/assets/terminal.js", status: 200, contains: "sandgate", ctype: "text/javascript; charset=utf-8"},
		{name: "style", method: "GET", target: "/assets/terminal.css", status: 200, contains: "body", ctype: "text/css; charset=utf-8"},
		{name: "missing asset", method: "GET", target: "/assets/nope.js", status: 404},
		{name: "pages are not assets", method: "GET", target: "/assets/index.html", status: 404},
		{name: "hidden files are not served", method: "GET", target: "/assets/.gitkeep", status: 404},
		{name: "dot segments are cleaned first", method: "GET", target: "/assets/../index.html", status: http.StatusTemporaryRedirect},
		{name: "unknown path", method: "GET", target: "/nope", status: 404},
		{name: "pages are read-only", method: "POST", target: "/", status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, tt.method, tt.target, nil)
			if res.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.target, res.StatusCode, tt.status)
			}
			b := body(t, res)
			if tt.contains != "" && !strings.Contains(b, tt.contains) {
				t.Errorf("body %q does not contain %q", b, tt.contains)
			}
			if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.ctype)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("no nosniff header")
			}
		})
	}
}

func TestPageHeaders(t *testing.T) {
	t.Parallel()
	h := newHandler(builtFS())
	for _, target := range []string{"/", "/t/a/b"} {
		res := get(t, h, "GET", target, nil)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", target, csp, want)
			}
		}
		if got := res.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q; the token may be in the page URL", target, got)
		}
	}
}

func TestConditionalAndGzip(t *testing.T) {
	t.Parallel()
	h := newHandler(builtFS())
	want := string(builtFS()["assets/terminal.js"].Data)

	plain := get(t, h, "GET", "/assets/terminal.js", nil)
	if plain.Header.Get("Content-Encoding") != "" || body(t, plain) != want {
		t.Fatalf("plain request got an encoded or wrong body")
	}
	tag := plain.Header.Get("ETag")
	if tag == "" {
		t.Fatal("no ETag")
	}
	if res := get(t, h, "GET", "/assets/terminal.js", map[string]string{"If-None-Match": tag}); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: status %d, want 304", res.StatusCode)
	}

	gz := get(t, h, "GET", "/assets/terminal.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if gz.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q", gz.Header.Get("Content-Encoding"))
	}
	if gz.Header.Get("ETag") == tag {
		t.Errorf("the gzip copy has the same ETag as the plain one")
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(body(t, gz))))
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	unz, err := io.ReadAll(zr)
	if err != nil || string(unz) != want {
		t.Fatalf("gunzipped body differs (err %v)", err)
	}
	if !strings.Contains(gz.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("no Vary: Accept-Encoding")
	}
	if res := get(t, h, "GET", "/assets/terminal.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); res.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 was answered gzipped")
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		want   bool
	}{
		{name: "empty", header: "", want: false},
		{name: "gzip", header: "gzip", want: true},
		{name: "list", header: "deflate, gzip, br", want: true},
		{name: "q zero", header: "gzip;q=0", want: false},
		{name: "q zero point zero", header: "gzip; q=0.0", want: false},
		{name: "q half", header: "gzip;q=0.5", want: true},
		{name: "star", header: "*", want: true},
		{name: "other only", header: "br", want: false},
		{name: "upper case", header: "GZIP", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := acceptsGzip(tt.header); got != tt.want {
				t.Errorf("acceptsGzip(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestNotBuilt(t *testing.T) {
	t.Parallel()
	h := newHandler(fstest.MapFS{".gitkeep": {Data: nil}})
	for _, target := range []string{"/", "/t/dev1/main", "/assets/terminal.js"} {
		res := get(t, h, "GET", target, nil)
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", target, res.StatusCode)
		}
		if b := body(t, res); !strings.Contains(b, "web assets not built: run make web") {
			t.Errorf("%s: body %q lacks the build hint", target, b)
		}
	}
	if res := get(t, h, "GET", "/elsewhere", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("a non-UI path: status %d, want 404", res.StatusCode)
	}
}

// TestEmbedded checks the real embedded files, built or not: the dashboard is either
// served or answered with the build hint, never anything else.
func TestEmbedded(t *testing.T) {
	t.Parallel()
	res := get(t, Handler(), "GET", "/", nil)
	b := body(t, res)
	switch res.StatusCode {
	case http.StatusOK:
		if !strings.Contains(b, "/assets/dashboard.js") {
			t.Errorf("the built dashboard does not load its script: %q", b)
		}
		for _, a := range []string{"/assets/dashboard.js", "/assets/dashboard.css", "/assets/terminal.js", "/assets/terminal.css"} {
			if r := get(t, Handler(), "GET", a, nil); r.StatusCode != http.StatusOK {
				t.Errorf("%s: status %d in a built bundle", a, r.StatusCode)
			}
		}
	case http.StatusServiceUnavailable:
		if b != notBuilt {
			t.Errorf("body %q, want %q", b, notBuilt)
		}
	default:
		t.Fatalf("status %d", res.StatusCode)
	}
}

// TestBundleCommitted: the built UI is part of the module (go install gets it), and
// Available tells a tree without it apart.
func TestBundleCommitted(t *testing.T) {
	t.Parallel()
	if !Available() {
		t.Fatal("the embedded dist/ has no built pages: run make web and commit gateway/webui/dist")
	}
	if built(fstest.MapFS{"dist/.gitkeep": {}}) {
		t.Fatal("a dist/ without pages counts as built")
	}
}
