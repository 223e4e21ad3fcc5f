package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokenTable maps API tokens to who they speak for. Tokens are compared by their SHA-256 in
// constant time, so neither a token's length nor its prefix leaks through timing.
type tokenTable struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [32]byte
	who Principal
}

func newTokenTable(tokens map[string]Principal) *tokenTable {
	t := &tokenTable{}
	for tok, who := range tokens {
		if tok == "" {
			continue
		}
		t.entries = append(t.entries, tokenEntry{sha256.Sum256([]byte(tok)), who})
	}
	return t
}

// principal returns who tok speaks for, checking every entry so the time taken does
// not depend on which one matches.
func (t *tokenTable) principal(tok string) (Principal, bool) {
	sum := sha256.Sum256([]byte(tok))
	found, who := 0, Principal{}
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found, who = 1, e.who
		}
	}
	return who, found == 1
}

// requestToken extracts the caller's token: the Authorization bearer header, or the
// token query parameter where the route allows it (SSE and WebSocket routes, whose
// browser clients cannot set headers).
func requestToken(r *http.Request, queryAllowed bool) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if queryAllowed {
		return r.URL.Query().Get("token")
	}
	return ""
}
