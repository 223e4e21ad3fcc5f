package gateway

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// tokenTable maps API tokens to who they speak for: the tokens configured on this node
// and those the cluster replicates (cluster_tokens.go), which every node accepts.
// Tokens are looked up by their SHA-256, never by their text, so neither a token's
// length nor its prefix leaks through timing, and the table holds no token in
// clear. The lookup takes no lock: the merged table is an immutable map behind an
// atomic pointer, replaced whole when the replicated table changes.
type tokenTable struct {
	local map[[32]byte]Principal // configured on this node; never modified
	cur   atomic.Pointer[map[[32]byte]Principal]
	mu    sync.Mutex // serialises refresh
}

func newTokenTable(tokens map[string]Principal) *tokenTable {
	t := &tokenTable{local: map[[32]byte]Principal{}}
	for tok, who := range tokens {
		if tok == "" {
			continue
		}
		t.local[sha256.Sum256([]byte(tok))] = who
	}
	t.cur.Store(&t.local)
	return t
}

// principal returns who tok speaks for.
func (t *tokenTable) principal(tok string) (Principal, bool) {
	if tok == "" {
		return Principal{}, false
	}
	who, ok := (*t.cur.Load())[sha256.Sum256([]byte(tok))]
	return who, ok
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
