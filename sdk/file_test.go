package sdk

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestGetPath: GetPath tells a file from a directory by the Content-Type the gateway
// sets, not by the body, so a file whose bytes are a JSON listing is still a file.
func TestGetPath(t *testing.T) {
	t.Parallel()
	const listing = `{"entries":[{"name":"a.bin","type":"file","size":3,"mode":"0644","modified_at":"2026-11-22T02:00:00Z"}]}`
	tests := []struct {
		name    string
		ctype   string
		body    string
		dir     bool
		entries int
	}{
		{"file", "application/octet-stream", "\x00\xffbin", false, 0},
		{"file holding JSON", "application/octet-stream", listing, false, 0},
		{"directory", "application/json", listing, true, 1},
		{"directory with charset", "application/json; charset=utf-8", listing, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/sandboxes/dev1/files" || r.URL.Query().Get("path") != "x/y" {
					writeAPIError(w, 404, CodeNotFound, "wrong route "+r.URL.String())
					return
				}
				w.Header().Set("Content-Type", tt.ctype)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			got, err := New(srv.URL, "", nil).GetPath(t.Context(), "dev1", "x/y")
			if err != nil {
				t.Fatal(err)
			}
			if got.Dir != tt.dir || len(got.Entries) != tt.entries {
				t.Fatalf("got %+v, want dir %v with %d entries", got, tt.dir, tt.entries)
			}
			if tt.dir {
				if got.Body != nil || got.Entries[0].Name != "a.bin" || got.Entries[0].Mode != 0o644 {
					t.Fatalf("got %+v", got)
				}
				return
			}
			b, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil || string(b) != tt.body {
				t.Fatalf("body %q (%v), want %q", b, err, tt.body)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeAPIError(w, 404, CodeNotFound, "no such file")
		}))
		defer srv.Close()
		if _, err := New(srv.URL, "", nil).GetPath(t.Context(), "dev1", "nope"); !IsNotFound(err) {
			t.Fatalf("err %v, want not_found", err)
		}
	})
}
