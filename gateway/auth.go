package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokenTable maps API tokens to tenant names. Tokens are compared by their SHA-256 in
// constant time, so neither a token's length nor its prefix leaks through timing.
type tokenTable struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum    [32]byte
	tenant string
}

func newTokenTable(tokens map[string]string) *tokenTable {
	t := &tokenTable{}
	for tok, tenant := range tokens {
		if tok == "" {
			continue
		}
		t.entries = append(t.entries, tokenEntry{sha256.Sum256([]byte(tok)), tenant})
	}
	return t
}

// tenant returns the tenant of tok, checking every entry so the time taken does not
// depend on which one matches.
func (t *tokenTable) tenant(tok string) (string, bool) {
	sum := sha256.Sum256([]byte(tok))
	found, tenant := 0, ""
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found, tenant = 1, e.tenant
		}
	}
	return tenant, found == 1
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

type tenantKey struct{}

func withTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// tenantOf returns the tenant that the request's token belongs to.
func tenantOf(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}
