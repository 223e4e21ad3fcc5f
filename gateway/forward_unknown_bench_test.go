package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkUnknownSandbox times GET /v1/sandboxes/{sb} through a node that does not
// lead: a sandbox it owns (200, served from its replica) against one it would own
// that does not exist (404, after a catch-up with the leader), in alternating rounds
// of the same run (3 nodes on loopback), then a burst of 32 concurrent 404s against
// a burst of 32 concurrent 200s. Each request of a 404 is an unknown sandbox again:
// nothing is cached.
func BenchmarkUnknownSandbox(b *testing.B) {
	tr := newTrio(b, nil)
	var via *testServer
	for _, n := range tr.nodes {
		if !n.srv.cluster.IsLeader() {
			via = n
			break
		}
	}
	id := string(via.srv.cluster.ID())
	known, none := tr.ownedBy("bench-known", id), tr.ownedBy("bench-none", id)
	via.sandbox(known)
	addr := strings.TrimPrefix(via.url, "http://")
	found := newKeepAliveClient(b, addr, "GET", "/v1/sandboxes/"+known, testToken, "")
	missing := newKeepAliveClient(b, addr, "GET", "/v1/sandboxes/"+none, testToken, "")
	ways := []func() error{found.do, func() error { return missing.expect(http.StatusNotFound) }}
	for _, w := range ways {
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
	const rounds = 200
	took := interleave(b, rounds, ways)
	ok, nf := p50(took[0]), p50(took[1])
	b.ReportMetric(float64(ok)/1e3, "200-p50-µs")
	b.ReportMetric(float64(nf)/1e3, "404-p50-µs")
	b.ReportMetric(float64(nf)/float64(ok), "404/200-p50")
	logCatchUps(b, via, "after the single requests")

	const burst = 32
	var nones []string
	for k := 0; k < burst; k++ {
		nones = append(nones, tr.ownedBy(fmt.Sprintf("bench-none%d", k), id))
	}
	var okB, nfB time.Duration
	for i := 0; i < 5; i++ {
		okB += burstGet(b, via, burst, func(int) string { return known }, http.StatusOK)
		nfB += burstGet(b, via, burst, func(k int) string { return nones[k] }, http.StatusNotFound)
	}
	b.ReportMetric(float64(okB/5)/1e3, "200-burst32-µs")
	b.ReportMetric(float64(nfB/5)/1e3, "404-burst32-µs")
	b.ReportMetric(float64(nfB)/float64(okB), "404/200-burst32")
	logCatchUps(b, via, "after the bursts")
}

// logCatchUps logs ts's catch-up counters (builds that count them): how the 404s
// caught up, and how many requests shared each.
func logCatchUps(b *testing.B, ts *testServer, when string) {
	for _, line := range strings.Split(string(ts.doToken(testAdminToken, "GET", "/metrics", nil).body), "\n") {
		if strings.HasPrefix(line, "sandgate_forward_catchup") {
			b.Log(when + ": " + line)
		}
	}
}

// burstGet sends n GETs of /v1/sandboxes/{id(k)} through ts at once and returns how
// long the last took to be answered with want.
func burstGet(b *testing.B, ts *testServer, n int, id func(k int) string, want int) time.Duration {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodGet, ts.url+"/v1/sandboxes/"+id(k), nil)
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := ts.client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				errs <- fmt.Errorf("GET %s: %d, want %d", id(k), resp.StatusCode, want)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return took
}
