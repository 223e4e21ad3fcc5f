package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// dist holds the built UI; see the package doc.
//
//go:embed all:dist
var dist embed.FS

// notBuilt is the body of every UI response while the bundle is missing.
const notBuilt = "web assets not built: run make web\n"

// pageCSP allows the pages only their own origin: scripts, styles, fetch, EventSource
// and WebSocket (connect-src 'self' covers ws: and wss: on the same host). Inline styles
// are allowed because xterm.js sets its measured sizes in a style element.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// validID reports whether id has the API's id syntax, 1-63 characters of [a-z0-9_-]
// starting with a letter or digit; other terminal page paths are 404. A loop, not a
// regexp: `{0,62}` compiles to a program of some 700 allocations (52 KB), which
// package initialisation would make in every process of the binary, CLI runs included.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 63 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Handler returns the handler for the UI routes (see the package doc). It is safe for
// concurrent use; the embedded files are read once, when Handler is called.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("webui: " + err.Error()) // "dist" is a valid path: cannot happen
	}
	return newHandler(sub)
}

// file is one asset, kept in memory with its ETag and, when it shrinks, a gzip copy.
type file struct {
	name   string
	data   []byte
	etag   string
	gz     []byte
	gzEtag string
}

type handler struct {
	mux   *http.ServeMux
	files map[string]*file // by path inside dist, such as "assets/terminal.js"
}

var _ http.Handler = (*handler)(nil)

// newHandler serves the UI from fsys, laid out as dist/ (index.html, terminal.html,
// assets/...). With no index.html in fsys, every UI route answers 503.
func newHandler(fsys fs.FS) *handler {
	h := &handler{mux: http.NewServeMux(), files: map[string]*file{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path.Base(p), ".") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		h.files[p] = newFile(p, data)
		return nil
	})
	if h.files["index.html"] == nil || h.files["terminal.html"] == nil {
		h.mux.HandleFunc("GET /{$}", serveNotBuilt)
		h.mux.HandleFunc("GET /t/{sandbox}/{terminal}", serveNotBuilt)
		h.mux.HandleFunc("GET /assets/", serveNotBuilt)
		return h
	}
	h.mux.HandleFunc("GET /{$}", h.page("index.html"))
	h.mux.HandleFunc("GET /t/{sandbox}/{terminal}", h.terminalPage)
	h.mux.HandleFunc("GET /assets/{file...}", h.asset)
	return h
}

func newFile(name string, data []byte) *file {
	f := &file{name: name, data: data, etag: etag(data)}
	switch path.Ext(name) {
	case ".js", ".css", ".html", ".txt", ".map", ".svg":
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(data)
		_ = zw.Close()
		if buf.Len() < len(data)*9/10 {
			f.gz = buf.Bytes()
			f.gzEtag = etag(f.gz)
		}
	}
	return f
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// Available reports whether the binary holds the built UI, so that a caller never
// advertises a page that would answer 503.
func Available() bool { return built(dist) }

// built reports whether fsys holds both pages.
func built(fsys fs.FS) bool {
	for _, p := range []string{"dist/index.html", "dist/terminal.html"} {
		if _, err := fs.Stat(fsys, p); err != nil {
			return false
		}
	}
	return true
}

func serveNotBuilt(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(notBuilt))
}

func (h *handler) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pageCSP)
		h.serve(w, r, h.files[name])
	}
}

func (h *handler) terminalPage(w http.ResponseWriter, r *http.Request) {
	if !validID(r.PathValue("sandbox")) || !validID(r.PathValue("terminal")) {
		http.Error(w, "not found: the terminal page is /t/{sandbox}/{terminal}, with API ids", http.StatusNotFound)
		return
	}
	h.page("terminal.html")(w, r)
}

func (h *handler) asset(w http.ResponseWriter, r *http.Request) {
	f := h.files["assets/"+r.PathValue("file")]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, f)
}

// serve writes f, gzipped when the client accepts it, and answers conditional requests
// from the ETag. Asset names carry no hash, so clients revalidate every time (no-cache);
// the answer is a cheap 304 when nothing changed.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, f *file) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache")
	data, tag := f.data, f.etag
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			data, tag = f.gz, f.gzEtag
			hd.Set("Content-Encoding", "gzip")
		}
	}
	if ct := contentType(f.name); ct != "" {
		hd.Set("Content-Type", ct)
	}
	hd.Set("ETag", tag)
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(data))
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed with a non-zero q.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(part, ";")
		enc = strings.TrimSpace(enc)
		if !strings.EqualFold(enc, "gzip") && enc != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

// contentType names the types the bundle has, so they do not depend on the host's
// MIME tables.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".map":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	}
	return ""
}
