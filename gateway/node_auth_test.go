package gateway

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeAuth signs requests and checks them as the receiving node does, over a real
// HTTP exchange (the body's MAC travels as a trailer): only the cluster's secret, the
// signed request line, a time within the skew and the signed body pass.
func TestNodeAuth(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte("s"), 32)
	type seen struct {
		signErr, bodyErr error
		body             string
	}
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s seen
		nr, err := verifyNodeRequest(secret, r, time.Now())
		s.signErr = err
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(nr, 5))
			s.body = string(b)
			s.bodyErr = nr.verify()
		}
		mu.Lock()
		last = s
		mu.Unlock()
	}))
	defer srv.Close()
	tests := []struct {
		name     string
		secret   []byte
		at       time.Time
		edit     func(r *http.Request)
		wantSign bool
		wantBody bool
	}{
		{name: "signed", secret: secret, at: time.Now(), wantSign: true, wantBody: true},
		{name: "another secret", secret: bytes.Repeat([]byte("x"), 32), at: time.Now()},
		{name: "too old", secret: secret, at: time.Now().Add(-2 * nodeAuthSkew)},
		{name: "from the future", secret: secret, at: time.Now().Add(2 * nodeAuthSkew)},
		{name: "other path", secret: secret, at: time.Now(), edit: func(r *http.Request) { r.URL.Path = "/v1/cluster/workspaces/other" }},
		{name: "other query", secret: secret, at: time.Now(), edit: func(r *http.Request) { r.URL.RawQuery = "epoch=2" }},
		{name: "other sender", secret: secret, at: time.Now(), edit: func(r *http.Request) {
			r.Header.Set(nodeAuthHeader, "y"+strings.TrimPrefix(r.Header.Get(nodeAuthHeader), "x"))
		}},
		{name: "other body", secret: secret, at: time.Now(), wantSign: true, edit: func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader("evil payload"))
		}},
		{name: "no trailer", secret: secret, at: time.Now(), wantSign: true, edit: func(r *http.Request) { r.Trailer = nil }},
		{name: "unsigned", at: time.Now()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/v1/cluster/workspaces/sb?epoch=1", strings.NewReader("the workspace"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.secret != nil {
				signNodeRequest(tt.secret, req, "x", tt.at)
			}
			if tt.edit != nil {
				tt.edit(req)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			s := last
			mu.Unlock()
			if (s.signErr == nil) != tt.wantSign || (s.signErr != nil && !errors.Is(s.signErr, errNodeAuth)) {
				t.Fatalf("signature: %v, want accepted %v", s.signErr, tt.wantSign)
			}
			if tt.wantSign && (s.bodyErr == nil) != tt.wantBody {
				t.Fatalf("body: %v, want accepted %v", s.bodyErr, tt.wantBody)
			}
		})
	}
}
