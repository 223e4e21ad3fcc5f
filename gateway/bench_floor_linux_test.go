package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkServerFloor splits this process's CPU per exec on the namespace way (the
// ns-self figure of BenchmarkExecCPU) against floors measured in the same run, 8
// keep-alive clients each, in rotated phases:
//
//   - bare-noop: a bare net/http handler that reads nothing and writes nothing, behind
//     the same client: what any Go HTTP server costs per request here;
//   - bare-http: a bare handler that does only what an exec's HTTP part must: it reads
//     the body and writes a response with the headers and body of an exec of `true`;
//   - gw-nospawn: our server, an exec whose cwd leaves the workspace: routing, auth,
//     ids, tenancy, the body's read and decode, the policy, the actor's two turns and the
//     runtime's checks, answered 400 before any process is started;
//   - ns: our server, an exec of `true` (BenchmarkExecCPU's ns way).
//
// ns minus gw-nospawn is the spawn path (the runtime's plumbing, the request to the
// init, the wait and the reap); gw-nospawn minus bare-http is the gateway and the actor.
// SANDGATE_BENCH_ONLY=<phase> runs one phase alone, for a profiler.
func BenchmarkServerFloor(b *testing.B) {
	ts := newTestServer(b, &serverOptions{config: func(c *Config) { c.Runtime = RuntimeNamespace }})
	ts.sandbox("bench")
	const path, body = "/v1/sandboxes/bench/exec", `{"argv":["true"]}`
	const badCwd = `{"argv":["true"],"cwd":"../.."}`
	const execBody = `{"exit_code":0,"signal":null,"stdout":"","stderr":"","stdout_truncated":false,"stderr_truncated":false,"timed_out":false,"duration_ms":1}`
	noop := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer noop.Close()
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Request-Id", newRequestID())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, execBody)
	}))
	defer bare.Close()
	const clients, perClient, phases = 8, 40, 6
	addr := strings.TrimPrefix(ts.url, "http://")
	var noopKA, bareKA, badKA, nsKA [clients]*keepAliveClient
	for c := range clients {
		noopKA[c] = newKeepAliveClient(b, strings.TrimPrefix(noop.URL, "http://"), "POST", "/", "", body)
		bareKA[c] = newKeepAliveClient(b, strings.TrimPrefix(bare.URL, "http://"), "POST", "/", "", body)
		badKA[c] = newKeepAliveClient(b, addr, "POST", path, testToken, badCwd)
		nsKA[c] = newKeepAliveClient(b, addr, "POST", path, testToken, body)
	}
	if err := nsKA[0].do(); err != nil { // starts the init
		b.Fatal(err)
	}
	ways := []struct {
		name string
		run  func(int) error
	}{
		{"bare-noop", func(c int) error { return noopKA[c].do() }},
		{"bare-http", func(c int) error { return bareKA[c].do() }},
		{"gw-nospawn", func(c int) error { return badKA[c].expect(http.StatusBadRequest) }},
		{"ns", func(c int) error { return nsKA[c].do() }},
	}
	only := os.Getenv("SANDGATE_BENCH_ONLY")
	var wall, cpu [4]time.Duration
	var cs [4]int64
	var mallocs [4]uint64
	for i := range phases {
		for j := range ways {
			k := (i + j) % len(ways)
			if only != "" && ways[k].name != only {
				continue
			}
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			s0, c0 := selfCPU(b), selfSwitches(b)
			wall[k] += clientPhase(b, clients, perClient, ways[k].run)
			cpu[k] += selfCPU(b) - s0
			cs[k] += selfSwitches(b) - c0
			goruntime.ReadMemStats(&m1)
			mallocs[k] += m1.Mallocs - m0.Mallocs
		}
	}
	n := float64(clients * perClient * phases)
	for k, w := range ways {
		if only != "" && w.name != only {
			continue
		}
		b.ReportMetric(float64(cpu[k].Microseconds())/n, w.name+"-cpu-µs/req")
		b.ReportMetric(float64(cs[k])/n, w.name+"-cs/req")
		b.ReportMetric(float64(mallocs[k])/n, w.name+"-allocs/req")
		b.ReportMetric(float64(wall[k].Microseconds())/n, w.name+"-wall-µs/req")
	}
}
