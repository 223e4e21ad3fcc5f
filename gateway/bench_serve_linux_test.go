package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServeRequest is the gateway's own CPU per request, without a socket or a
// process: requests served in memory by the full handler (body deadline, routing,
// auth, id checks, metrics, logging, decoding and rendering). exec-bad-cwd posts an
// exec whose cwd leaves the workspace (decoded, the actor's turns, then the runtime's
// 400 before any process); get-sandbox renders an active sandbox. It measures the
// cuts of "#14, fourth pass" (BENCHMARKS.md) that an 8-client exec run cannot resolve
// on a shared VM; its allocations per request are exact.
func BenchmarkServeRequest(b *testing.B) {
	ts := newTestServer(b, &serverOptions{})
	ts.sandbox("bench")
	h := ts.srv.Handler()
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"exec-bad-cwd", "POST", "/v1/sandboxes/bench/exec", `{"argv":["true"],"cwd":"../.."}`, http.StatusBadRequest},
		{"get-sandbox", "GET", "/v1/sandboxes/bench", "", http.StatusOK},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := selfCPU(b)
			for b.Loop() {
				req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != c.status {
					b.Fatalf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body)
				}
			}
			// This process's CPU per request, GC and the test servers' idle background
			// included: what the request costs the machine, not only its own goroutine.
			b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
