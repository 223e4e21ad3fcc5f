package gateway

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// checkHandshake refuses, in the contract's error shape, the WebSocket handshakes that
// websocket.Accept would refuse with a plain-text body: a request that is no upgrade
// (426), a bad version or key (400), and a page whose Origin is not allowed (403
// forbidden). Browsers send Origin; other clients need not, and are not checked.
//
// Origins are matched as websocket.Accept matches them, which checks again: the page's
// host equals the request's Host, or matches one of allowed (path.Match patterns, case
// folded, against the host, or against scheme://host for a pattern with "://").
func checkHandshake(w http.ResponseWriter, r *http.Request, allowed []string) error {
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
	origin := r.Header.Get("Origin")
	if origin == "" || originAllowed(origin, r.Host, allowed) {
		return nil
	}
	return errorf(http.StatusForbidden, codeForbidden, "origin %q may not open WebSockets here (see serve's --allowed-origins)", origin)
}

func originAllowed(origin, host string, allowed []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	for _, pattern := range allowed {
		target := u.Host
		if strings.Contains(pattern, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(target)); ok {
			return true
		}
	}
	return false
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
