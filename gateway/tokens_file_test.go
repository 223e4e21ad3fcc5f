package gateway

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var parseTokensTests = []struct {
	name string
	in   string
	want map[string]Principal
	err  string // a part of the error; "" means no error
}{
	{"tenant names", `{"a": "acme", "b": "globex"}`, map[string]Principal{"a": {Tenant: "acme"}, "b": {Tenant: "globex"}}, ""},
	{"admin entry", `{"ops": {"tenant": "ops", "admin": true}}`, map[string]Principal{"ops": {Tenant: "ops", Admin: true}}, ""},
	{"admin false", `{"t": {"tenant": "acme", "admin": false}}`, map[string]Principal{"t": {Tenant: "acme"}}, ""},
	{"object without admin", `{"t": {"tenant": "acme"}}`, map[string]Principal{"t": {Tenant: "acme"}}, ""},
	{"mixed, white space", " {\n \"a\": \"acme\",\n \"o\": {\"admin\": true, \"tenant\": \"ops\"}\n}\n",
		map[string]Principal{"a": {Tenant: "acme"}, "o": {Tenant: "ops", Admin: true}}, ""},
	{"not JSON", `acme`, nil, "not JSON"},
	{"empty file", ``, nil, "not JSON"},
	{"an array", `["a"]`, nil, "must be a JSON object"},
	{"no tokens", `{}`, nil, "no tokens"},
	{"empty token", `{"": "acme"}`, nil, "a token is empty"},
	{"token with a space", `{"a b": "acme"}`, nil, "white space"},
	{"token with a newline", `{"ab\n": "acme"}`, nil, "white space"},
	{"empty tenant", `{"a": ""}`, nil, "tenant name is empty"},
	{"empty tenant in an object", `{"a": {"tenant": ""}}`, nil, "tenant name is empty"},
	{"missing tenant", `{"a": {"admin": true}}`, nil, `"tenant" is required`},
	{"unknown field", `{"a": {"tenant": "x", "admn": true}}`, nil, `unknown field "admn"`},
	{"miscased field", `{"a": {"Tenant": "x"}}`, nil, `unknown field "Tenant"`},
	{"field twice", `{"a": {"tenant": "x", "tenant": "y"}}`, nil, "given twice"},
	{"token twice", `{"a": "x", "a": "y"}`, nil, "given twice"},
	{"admin as a string", `{"a": {"tenant": "x", "admin": "true"}}`, nil, `"admin" must be a boolean`},
	{"tenant as a number", `{"a": {"tenant": 7}}`, nil, `"tenant" must be a string`},
	{"null tenant", `{"a": {"tenant": null}}`, nil, `"tenant" must be a string`},
	{"null value", `{"a": null}`, nil, "want a tenant name"},
	{"number value", `{"a": 1}`, nil, "want a tenant name"},
	{"array value", `{"a": ["x"]}`, nil, "want a tenant name"},
	{"tenant with a control character", `{"a": "ac\u0001me"}`, nil, "control characters"},
	{"tenant too long", `{"a": "` + strings.Repeat("t", 129) + `"}`, nil, "over 128 bytes"},
	{"trailing data", `{"a": "acme"} {}`, nil, "trailing data"},
	{"cut short", `{"a": "acme"`, nil, "EOF"},
}

func TestParseTokens(t *testing.T) {
	t.Parallel()
	for _, tt := range parseTokensTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTokens([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestParseTokensHidesTokens: an error names a token by its first characters only.
func TestParseTokensHidesTokens(t *testing.T) {
	t.Parallel()
	secret := "s3cr3t-token-value"
	_, err := ParseTokens([]byte(`{"` + secret + `": ""}`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParseTokens: the parser never panics, and whatever it accepts is a non-empty map
// of sendable tokens to valid tenant names, which a second parse of the same bytes
// returns again.
func FuzzParseTokens(f *testing.F) {
	for _, tt := range parseTokensTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseTokens(data)
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatal("accepted no tokens")
		}
		for tok, p := range got {
			if checkTokenText(tok) != nil || checkTenantName("", p.Tenant) != nil {
				t.Fatalf("accepted token %q → %+v", tok, p)
			}
		}
		again, err := ParseTokens(data)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("second parse: %v, %v", again, err)
		}
	})
}

func TestServeTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	admin := Principal{Tenant: DefaultTenant, Admin: true}
	tests := []struct {
		name, token, file string
		want              map[string]Principal
		err               string
	}{
		{"nothing", "", "", map[string]Principal{}, ""},
		{"--token alone is an admin of default", "t0", "", map[string]Principal{"t0": admin}, ""},
		{"--token with a file", "t0", file("f1", `{"a": "acme"}`), map[string]Principal{"t0": admin, "a": {Tenant: "acme"}}, ""},
		{"file alone", "", file("f2", `{"a": {"tenant": "ops", "admin": true}}`), map[string]Principal{"a": {Tenant: "ops", Admin: true}}, ""},
		{"the file repeats --token as its admin", "t0", file("f3", `{"t0": {"tenant": "default", "admin": true}}`), map[string]Principal{"t0": admin}, ""},
		{"the file gives --token to a tenant", "t0", file("f4", `{"t0": "acme"}`), nil, "always an admin"},
		{"bad file", "t0", file("f5", `{"a": ""}`), nil, "f5: token"},
		{"missing file", "", filepath.Join(dir, "nope"), nil, "failed to read tokens file"},
		{"--token with a space", "t 0", "", nil, "--token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ServeTokens(tt.token, tt.file)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
