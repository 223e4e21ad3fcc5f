package gateway

import (
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// checkHandshake refuses, in the contract's error shape, the WebSocket handshakes that
// websocket.Accept would refuse with a plain-text body: a request that is no upgrade
// (426), a bad version or key (400), and a page whose Origin is not allowed (403
// forbidden). Browsers send Origin; other clients need not, and are judged by their
// token alone. Which origins are allowed is originRule's to say; websocket.Accept is
// told to skip its own check, which trusts the Host header.
func checkHandshake(w http.ResponseWriter, r *http.Request, origins originRule) error {
	if !hasToken(r.Header, "Connection", "upgrade") || !hasToken(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Upgrade", "websocket")
		return errorf(http.StatusUpgradeRequired, codeInvalidArgument, "this route is a WebSocket: the request needs Connection: Upgrade and Upgrade: websocket")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return badRequest("unsupported WebSocket version %q: only 13 is", v)
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return badRequest("a WebSocket handshake needs exactly one Sec-WebSocket-Key")
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(k) != 16 {
		return badRequest("Sec-WebSocket-Key must be 16 bytes in base64")
	}
	origin := r.Header.Values("Origin")
	if len(origin) == 0 || len(origin) == 1 && origins.allows(origin[0]) {
		return nil
	}
	return errorf(http.StatusForbidden, codeForbidden, "origin %q may not open WebSockets here: only pages of the server's own address, or of hosts in serve's --allowed-origins, may", strings.Join(origin, ", "))
}

// originRule says which pages may open WebSockets:
//
//  1. pages served from the server's own listen address (scheme http or https, the
//     same host and port);
//  2. for a loopback listen address, also localhost, 127.0.0.1 and [::1] on the same
//     port;
//  3. pages whose host matches one of the patterns (Config.AllowedOrigins).
//
// A server listening on all interfaces (0.0.0.0, [::] or ":port") has no one address a
// page could name, so only the patterns allow it. The request's Host header plays no
// part: a page on another name that resolves to this server (DNS rebinding) sends its
// own name in both Origin and Host.
type originRule struct {
	own      []string // lower-case host:port forms of rules 1 and 2
	patterns []string // lower-case path.Match patterns of rule 3
}

// originRule returns the rule for this server's listen address: the listener's once
// Serve runs (a configured port of 0 is resolved then), else the configured one.
func (s *Server) originRule() originRule {
	s.mu.Lock()
	addr := s.listenAddr
	s.mu.Unlock()
	if addr == "" {
		addr = s.cfg.Listen
	}
	return newOriginRule(addr, s.cfg.AllowedOrigins)
}

func newOriginRule(listen string, patterns []string) originRule {
	rule := originRule{patterns: patterns}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return rule // ":port" listens on all interfaces
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return rule
	}
	rule.own = append(rule.own, canonHostPort(host, port))
	if IsLoopback(listen) {
		for _, alias := range []string{"localhost", "127.0.0.1", "::1"} {
			rule.own = append(rule.own, canonHostPort(alias, port))
		}
	}
	return rule
}

// canonHostPort spells host:port one way: lower case, an IP address in its shortest
// form, an IPv6 one in brackets.
func canonHostPort(host, port string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, port)
}

// allows reports whether a page of origin (scheme://host[:port]) may open WebSockets.
func (o originRule) allows(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case port != "":
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	}
	if (scheme == "http" || scheme == "https") && port != "" {
		hp := canonHostPort(u.Hostname(), port)
		for _, own := range o.own {
			if hp == own {
				return true
			}
		}
	}
	host := strings.ToLower(u.Host)
	for _, pattern := range o.patterns {
		target := host
		if strings.Contains(pattern, "://") {
			target = scheme + "://" + host
		}
		if ok, _ := path.Match(pattern, target); ok {
			return true
		}
	}
	return false
}

// cleanPatterns returns the origin patterns lower-cased and trimmed, without empty
// ones (a trailing comma in --allowed-origins).
func cleanPatterns(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// hasToken reports whether the comma-separated values of header name hold token, case
// folded.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
