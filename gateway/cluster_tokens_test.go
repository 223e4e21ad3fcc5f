package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func sumHex(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

// TestTokenTableRefresh: the replicated table adds tokens and wins over this node's
// configuration for a token it names; entries no gateway writes are ignored.
func TestTokenTableRefresh(t *testing.T) {
	t.Parallel()
	table := newTokenTable(map[string]Principal{"local": {Tenant: "a"}, "both": {Tenant: "a", Admin: true}})
	table.refresh(map[string][]byte{
		tokenKeyPrefix + sumHex("remote"): []byte(`{"tenant":"r"}`),
		tokenKeyPrefix + sumHex("both"):   []byte(`{"tenant":"b"}`),
		tokenKeyPrefix + "zz":             []byte(`{"tenant":"x"}`),
		tokenKeyPrefix + sumHex("empty"):  []byte(`{"tenant":""}`),
	})
	tests := []struct {
		tok  string
		want Principal
		ok   bool
	}{
		{"local", Principal{Tenant: "a"}, true},
		{"remote", Principal{Tenant: "r"}, true},
		{"both", Principal{Tenant: "b"}, true},
		{"empty", Principal{}, false},
		{"", Principal{}, false},
		{"nobody", Principal{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.tok, func(t *testing.T) {
			got, ok := table.principal(tt.tok)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("principal(%q) = %+v %v, want %+v %v", tt.tok, got, ok, tt.want, tt.ok)
			}
		})
	}
	// What this node must still add: "local" (absent) and "both" (another principal).
	replicated := map[string][]byte{tokenKeyPrefix + sumHex("both"): []byte(`{"tenant":"b"}`)}
	missing := table.missing(func(k string) ([]byte, bool) { v, ok := replicated[k]; return v, ok })
	if len(missing) != 2 {
		t.Fatalf("missing = %+v, want local and both", missing)
	}
	replicated[tokenKeyPrefix+sumHex("both")] = []byte(`{"tenant":"a","admin":true}`)
	replicated[tokenKeyPrefix+sumHex("local")] = []byte(`{"tenant":"a"}`)
	if missing := table.missing(func(k string) ([]byte, bool) { v, ok := replicated[k]; return v, ok }); len(missing) != 0 {
		t.Fatalf("missing = %+v once the table has both", missing)
	}
}

// TestClusterTokensRoute adds a token by its hash through POST /v1/cluster/tokens:
// it then works, with its tenant; bad entries are 400. The cluster secret is kept
// in the data directory, readable by the server's user only.
func TestClusterTokensRoute(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	bad := []map[string]any{
		{},
		{"tokens": []any{}},
		{"tokens": []any{map[string]any{"sha256": "abc", "tenant": "t"}}},
		{"tokens": []any{map[string]any{"sha256": sumHex("x"), "tenant": ""}}},
		{"tokens": []any{map[string]any{"sha256": sumHex("x"), "tenant": "t", "extra": 1}}},
	}
	for _, b := range bad {
		r := ts.doToken(testAdminToken, "POST", "/v1/cluster/tokens", b)
		if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Errorf("%v: %d %s, want 400", b, r.status, r.body)
		}
	}
	ts.doToken("new-token", "GET", "/v1/whoami", nil).want(t, http.StatusUnauthorized)
	ts.doToken(testAdminToken, "POST", "/v1/cluster/tokens", map[string]any{
		"tokens": []any{map[string]any{"sha256": sumHex("new-token"), "tenant": "zed"}},
	}).want(t, http.StatusNoContent)
	var who whoamiJSON
	eventually(t, clusterPatience, "the new token", func() bool {
		return ts.doToken("new-token", "GET", "/v1/whoami", nil).status == http.StatusOK
	})
	ts.doToken("new-token", "GET", "/v1/whoami", nil).json(t, &who)
	if who.Tenant != "zed" || who.Admin {
		t.Fatalf("new-token speaks for %+v", who)
	}

	st, err := os.Stat(filepath.Join(ts.srv.cfg.DataDir, secretFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cluster secret mode %v, want 0600", st.Mode().Perm())
	}
	var sec secretJSON
	r := ts.doToken(testAdminToken, "GET", "/v1/cluster/secret", nil).want(t, http.StatusOK)
	r.json(t, &sec)
	if b, err := decodeSecret(sec.Secret); err != nil || len(b) < 32 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("secret %q: %v, Cache-Control %q", sec.Secret, err, r.header.Get("Cache-Control"))
	}
}

// BenchmarkTokenLookup is the request path's token check with 1000 tokens.
func BenchmarkTokenLookup(b *testing.B) {
	tokens := map[string]Principal{}
	for i := range 1000 {
		tokens[fmt.Sprintf("token-%04d", i)] = Principal{Tenant: "t"}
	}
	table := newTokenTable(tokens)
	b.ReportAllocs()
	for range b.N {
		if _, ok := table.principal("token-0500"); !ok {
			b.Fatal("not found")
		}
	}
}
