package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWorkspaceRouteRefusesTenants: the node-to-node workspace routes take no API
// token, a tenant's or an admin's, nor a request signed with another secret or at
// another time; a correctly signed one gets past the signature (a stream nobody
// announced is 409, an announcement of a sandbox not being handed here awaits
// nothing), and nothing is installed or held.
func TestWorkspaceRouteRefusesTenants(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.sandbox("tgt")
	ts.must(http.StatusNoContent, "PUT", filesPath("tgt")+"?path=keep.txt", "mine\n")
	wrong := bytes.Repeat([]byte("w"), 32)
	routes := []struct {
		method, uri, body string
		signedOK          int
	}{
		{http.MethodPut, "/v1/cluster/workspaces/tgt?epoch=1", string(make([]byte, 1024)), http.StatusConflict},
		{http.MethodPut, "/v1/cluster/workspaces/tgt?epoch=1&abort=1", "", http.StatusConflict},
		{http.MethodPost, "/v1/cluster/workspaces", `{"epoch":1,"sandboxes":["tgt"]}`, http.StatusOK},
	}
	tests := []struct {
		name   string
		token  string
		secret []byte
		at     time.Time
		ok     bool
	}{
		{name: "no credentials"},
		{name: "tenant token", token: testToken},
		{name: "admin token", token: testAdminToken},
		{name: "another secret", secret: wrong, at: time.Now()},
		{name: "stale signature", secret: ts.srv.secret, at: time.Now().Add(-2 * nodeAuthSkew)},
		{name: "cluster secret", secret: ts.srv.secret, at: time.Now(), ok: true},
	}
	for _, rt := range routes {
		for _, tt := range tests {
			t.Run(rt.method+" "+rt.uri+" "+tt.name, func(t *testing.T) {
				req, err := http.NewRequest(rt.method, ts.url+rt.uri, strings.NewReader(rt.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set(diskBytesHeader, "0")
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				if tt.secret != nil {
					signNodeRequest(tt.secret, req, "x", tt.at)
				}
				resp, err := ts.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := http.StatusUnauthorized
				if tt.ok {
					want = rt.signedOK
				}
				if resp.StatusCode != want {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, body)
				}
				if rt.method == http.MethodPost && tt.ok && !strings.Contains(string(body), `"sandboxes":[]`) {
					t.Fatalf("announcement answered %s, want nothing awaited", body)
				}
			})
		}
	}
	if got := string(ts.must(http.StatusOK, "GET", filesPath("tgt")+"?path=keep.txt", nil).body); got != "mine\n" {
		t.Fatalf("the workspace changed: %q", got)
	}
	if ts.srv.handoffs.isArriving("tgt") {
		t.Fatal("tgt is held as arriving")
	}
}
