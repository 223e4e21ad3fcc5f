package gateway

import (
	"net/http"
)

// headerReadFactor is how far past Config.MaxHeaderBytes net/http still reads a
// request's headers: up to it they are refused by withHeaderLimit in the API's error
// shape, naming the limit; past it net/http refuses them itself with a plain-text 431
// (it answers before any handler), which also bounds what one connection makes the
// server hold.
const headerReadFactor = 4

// withHeaderLimit answers a request whose headers pass Config.MaxHeaderBytes with
// 431 too_large, naming the limit, and closes its connection.
func (s *Server) withHeaderLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := headerSize(r); n > s.cfg.MaxHeaderBytes {
			w.Header().Set("Connection", "close")
			s.writeError(w, r, errorf(http.StatusRequestHeaderFieldsTooLarge, codeTooLarge,
				"the request line and headers are %d bytes, over the limit of %d", n, s.cfg.MaxHeaderBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headerSize is the size of r's request line and headers as they came, counted as
// net/http counts them against its limit (give or take the spelling of line ends).
func headerSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}
