package gateway

import (
	"net/http/httptest"
	"testing"
)

func TestTokenTable(t *testing.T) {
	t.Parallel()
	table := newTokenTable(map[string]string{"tok-a": "acme", "tok-b": "globex", "": "nobody"})
	tests := []struct {
		name   string
		token  string
		tenant string
		ok     bool
	}{
		{"first", "tok-a", "acme", true},
		{"second", "tok-b", "globex", true},
		{"unknown", "tok-c", "", false},
		{"prefix", "tok-", "", false},
		{"empty never matches", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tenant, ok := table.tenant(tt.token)
			if tenant != tt.tenant || ok != tt.ok {
				t.Fatalf("tenant(%q) = %q, %v; want %q, %v", tt.token, tenant, ok, tt.tenant, tt.ok)
			}
		})
	}
}

func TestRequestToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header, url string
		query             bool
		want              string
	}{
		{"bearer", "Bearer abc", "/", false, "abc"},
		{"bearer lower case scheme", "bearer abc", "/", false, "abc"},
		{"basic is not a token", "Basic abc", "/?token=q", true, ""},
		{"query allowed", "", "/?token=q", true, "q"},
		{"query not allowed", "", "/?token=q", false, ""},
		{"none", "", "/", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", tt.url, nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			if got := requestToken(r, tt.query); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
