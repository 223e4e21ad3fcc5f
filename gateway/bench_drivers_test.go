package gateway

import (
	"context"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The benchmarks here run the same requests through two servers in one process, one
// on the namespace driver and one on the local driver, interleaved, and report the
// namespace driver's figures as ratios to the local driver's and to the raw OS
// (issue #14's "Speed"; BENCHMARKS.md). A machine where the namespace driver cannot
// run fails them (New refuses RuntimeNamespace there).

// driverServers starts a namespace-driver and a local-driver server, each with a
// sandbox "bench" whose CPU budget is every core of the machine. The raw baseline has
// no CPU limit, and the default budget (one core) would throttle the sandbox's
// children once they need more than a core between them: 8 clients of `true` on 2
// cores did, in 4 of 19 of the cgroup's 100 ms periods, which left the CPUs idle and
// measured the budget, not the cost of spawning through the gateway (BENCHMARKS.md,
// "#14, the budget in the throughput figure").
func driverServers(b *testing.B) (ns, local *testServer) {
	b.Helper()
	cores := 1000 * goruntime.NumCPU()
	server := func(driver string) *testServer {
		return newTestServer(b, &serverOptions{config: func(c *Config) {
			c.Runtime = driver
			c.Defaults.CPUMillis, c.Limits.CPUMillis = cores, cores
		}})
	}
	ns, local = server(RuntimeNamespace), server(RuntimeLocal)
	if got := ns.srv.driver.Name(); got != RuntimeNamespace {
		b.Fatalf("namespace server runs the %s driver", got)
	}
	ns.sandbox("bench")
	local.sandbox("bench")
	return ns, local
}

// BenchmarkExecDrivers times POST /exec of `true` (keep-alive client) through the
// namespace driver, the local driver and a raw os/exec of `true` in rotated order each
// round, then the throughput of 8 concurrent clients of each in rotated phases.
// Targets: namespace p50 ≤ 1.15× local; namespace 8-client throughput ≥ 0.85× raw.
func BenchmarkExecDrivers(b *testing.B) {
	ns, local := driverServers(b)
	const path, body = "/v1/sandboxes/bench/exec", `{"argv":["true"]}`
	client := func(ts *testServer) *keepAliveClient {
		return newKeepAliveClient(b, strings.TrimPrefix(ts.url, "http://"), "POST", path, testToken, body)
	}
	nsc, lc := client(ns), client(local)
	ways := []func() error{
		func() error { return exec.Command("true").Run() },
		nsc.do,
		lc.do,
	}
	// Warm both: the namespace server starts the sandbox's init on its first exec.
	for _, w := range ways {
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
	const rounds = 300
	took := interleave(b, rounds, ways)
	raw, pn, pl := float64(p50(took[0])), float64(p50(took[1])), float64(p50(took[2]))
	b.ReportMetric(raw/1e3, "raw-p50-µs")
	b.ReportMetric(pn/1e3, "ns-p50-µs")
	b.ReportMetric(pl/1e3, "local-p50-µs")
	b.ReportMetric(pn/pl, "ns/local-p50")
	b.ReportMetric(pn/raw, "ns/raw-p50")
	b.ReportMetric(pl/raw, "local/raw-p50")

	// 320 execs a phase, as BenchmarkExecCPU's: the end of a phase, while its last
	// clients finish and fewer than 8 run, is about one exec's latency whatever the
	// phase's length, and in phases of 80 it took up to a few percent off the way
	// with the longer latency.
	const clients, perClient, phases = 8, 40, 6
	var nsKA, lKA [clients]*keepAliveClient
	for c := range clients {
		nsKA[c], lKA[c] = client(ns), client(local)
	}
	phase := func(run func(client int) error) time.Duration { return clientPhase(b, clients, perClient, run) }
	tputs := []func(int) error{
		func(int) error { return exec.Command("true").Run() },
		func(c int) error { return nsKA[c].do() },
		func(c int) error { return lKA[c].do() },
	}
	total := make([]time.Duration, len(tputs))
	for i := 0; i < phases; i++ {
		for j := range tputs {
			k := (i + j) % len(tputs)
			total[k] += phase(tputs[k])
		}
	}
	rate := func(d time.Duration) float64 { return float64(clients*perClient*phases) / d.Seconds() }
	b.ReportMetric(rate(total[0]), "raw-8c-exec/s")
	b.ReportMetric(rate(total[1]), "ns-8c-exec/s")
	b.ReportMetric(rate(total[2]), "local-8c-exec/s")
	b.ReportMetric(rate(total[1])/rate(total[0]), "ns/raw-8c")
	b.ReportMetric(rate(total[2])/rate(total[0]), "local/raw-8c")
}

// BenchmarkPTYDrivers reads 64 MiB of PTY output over a WebSocket from each server,
// alternating with a raw PTY read of the same output, three rounds, and reports each
// driver's throughput as a ratio to the raw read and the namespace driver's to the
// local one's (target: within noise).
func BenchmarkPTYDrivers(b *testing.B) {
	ns, local := driverServers(b)
	const cmd = "head -c 67108864 /dev/zero"
	const rounds = 3
	var rawN, nsN, lN int64
	var rawD, nsD, lD time.Duration
	for i := 0; i < rounds; i++ {
		n, d := rawPTYRead(b, cmd)
		rawN, rawD = rawN+n, rawD+d
		// Which server goes first alternates.
		first, second := ns, local
		if i%2 == 1 {
			first, second = local, ns
		}
		for _, ts := range []*testServer{first, second} {
			n, _, d := wsPTYRead(b, ts, cmd)
			if ts == ns {
				nsN, nsD = nsN+n, nsD+d
			} else {
				lN, lD = lN+n, lD+d
			}
		}
	}
	mib := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / (1 << 20) }
	raw, rn, rl := mib(rawN, rawD), mib(nsN, nsD), mib(lN, lD)
	b.ReportMetric(raw, "raw-MiB/s")
	b.ReportMetric(rn, "ns-ws-MiB/s")
	b.ReportMetric(rl, "local-ws-MiB/s")
	b.ReportMetric(rn/raw, "ns/raw")
	b.ReportMetric(rl/raw, "local/raw")
	b.ReportMetric(rn/rl, "ns/local")
}

// BenchmarkEchoDrivers times one keystroke to `cat` on a PTY and its echo back over a
// WebSocket, on each server, rounds alternating with a raw PTY echo, and reports each
// driver's paired added time over the raw echo (target: the namespace driver's within
// noise of the local driver's).
func BenchmarkEchoDrivers(b *testing.B) {
	ns, local := driverServers(b)
	round := func(ts *testServer) func() time.Duration {
		var p processJSON
		ts.must(201, "POST", "/v1/sandboxes/bench/processes",
			map[string]any{"command": "cat", "pty": map[string]int{"cols": 80, "rows": 24}}).json(b, &p)
		c := ts.dialWS("/v1/sandboxes/bench/processes/" + p.ID + "/ws")
		c.readUntil(b, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
		ctx := context.Background()
		return func() time.Duration {
			start := time.Now()
			if err := c.conn.Write(ctx, websocket.MessageBinary, []byte("a")); err != nil {
				b.Fatal(err)
			}
			for {
				typ, _, err := c.conn.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if typ == websocket.MessageBinary {
					return time.Since(start)
				}
			}
		}
	}
	nsRound, lRound := round(ns), round(local)
	rawRound, stopRaw := rawEchoer(b)
	defer stopRaw()
	const rounds = 500
	var nsAdded, lAdded, nsT, lT []time.Duration
	for i := 0; i < rounds; i++ {
		r := rawRound()
		var n, l time.Duration
		if i%2 == 0 {
			n, l = nsRound(), lRound()
		} else {
			l, n = lRound(), nsRound()
		}
		nsT, lT = append(nsT, n), append(lT, l)
		nsAdded, lAdded = append(nsAdded, n-r), append(lAdded, l-r)
	}
	b.ReportMetric(float64(p50(nsT).Microseconds()), "ns-echo-p50-µs")
	b.ReportMetric(float64(p50(lT).Microseconds()), "local-echo-p50-µs")
	b.ReportMetric(float64(p50(nsAdded).Microseconds()), "ns-paired-added-p50-µs")
	b.ReportMetric(float64(p50(lAdded).Microseconds()), "local-paired-added-p50-µs")
	b.ReportMetric(float64(p50(nsT))/float64(p50(lT)), "ns/local-p50")
}
