package gateway

import (
	"net/http"
	"strings"
)

// CORS for OpenCode's routes: a browser UI (OpenCode's web app) calls them with fetch
// from a page of its own origin. The pages allowed are those the WebSocket Origin rule
// allows (originRule), and nothing else: a page may call these routes exactly when it
// may open their WebSocket. The node that accepted the request answers it (as it
// checks a WebSocket's Origin); a forwarded request's owner adds nothing, so a
// response never carries the grant twice.
const (
	corsMethods = "GET, POST, PUT, DELETE, OPTIONS"
	corsHeaders = "authorization, content-type, x-opencode-directory, x-opencode-workspace, x-request-id"
	corsExpose  = "retry-after, x-request-id"
	corsMaxAge  = "600" // seconds a browser may keep a preflight's answer
)

// openCodeSubtree reports whether path is under /v1/sandboxes/{sb}/opencode.
func openCodeSubtree(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/sandboxes/")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, "/")
	return ok && (rest == "opencode" || strings.HasPrefix(rest, "opencode/"))
}

// openCodeCORS adds the CORS grant to a request of an allowed page in the OpenCode
// subtree, and answers its preflight: 204 with the methods and headers allowed (no
// token needed: a browser sends none with a preflight), or 403 for a page that is not
// allowed. It reports whether it answered.
func (s *Server) openCodeCORS(w http.ResponseWriter, r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 || !openCodeSubtree(r.URL.Path) || r.Header.Get(hopsHeader) != "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	allowed := len(origins) == 1 && s.originRule().allows(origins[0])
	if allowed {
		h.Set("Access-Control-Allow-Origin", origins[0])
		h.Set("Access-Control-Expose-Headers", corsExpose)
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false // not a preflight: the route answers
	}
	if !allowed {
		h.Del("Access-Control-Expose-Headers")
		writeAPIError(w, errorf(http.StatusForbidden, codeForbidden,
			"origin %q may not call this server: only pages of the server's own address, or of hosts in serve's --allowed-origins, may",
			strings.Join(origins, ", ")))
		return true
	}
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}
