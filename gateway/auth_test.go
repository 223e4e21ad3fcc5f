package gateway

import (
	"net/http/httptest"
	"testing"
)

func TestTokenTable(t *testing.T) {
	t.Parallel()
	table := newTokenTable(map[string]Principal{
		"tok-a": {Tenant: "acme"}, "tok-b": {Tenant: "globex"}, "tok-ops": {Tenant: "ops", Admin: true}, "": {Tenant: "nobody"},
	})
	tests := []struct {
		name  string
		token string
		want  Principal
		ok    bool
	}{
		{"first", "tok-a", Principal{Tenant: "acme"}, true},
		{"second", "tok-b", Principal{Tenant: "globex"}, true},
		{"admin", "tok-ops", Principal{Tenant: "ops", Admin: true}, true},
		{"unknown", "tok-c", Principal{}, false},
		{"prefix", "tok-", Principal{}, false},
		{"empty never matches", "", Principal{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := table.principal(tt.token)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("principal(%q) = %+v, %v; want %+v, %v", tt.token, got, ok, tt.want, tt.ok)
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
