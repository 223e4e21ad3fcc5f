package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"
)

// The benchmarks here measure the gateway against the raw OS in the same run and report
// ratios (BENCHMARKS.md). Run them with `make bench`.

// interleave times every way once per round, rounds times, in an order rotated by
// one each round, so each follows each of the others equally often; it returns each
// way's times.
func interleave(b *testing.B, rounds int, ways []func() error) [][]time.Duration {
	b.Helper()
	took := make([][]time.Duration, len(ways))
	for i := 0; i < rounds; i++ {
		for j := range ways {
			k := (i + j) % len(ways)
			start := time.Now()
			if err := ways[k](); err != nil {
				b.Fatal(err)
			}
			took[k] = append(took[k], time.Since(start))
		}
	}
	return took
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkExecTrue times POST /exec of `true` against a raw os/exec of `true`, the
// p50 of single requests and the throughput of 8 concurrent clients. The headline
// figures use keepAliveClient; the same measures through net/http's Client, and a bare
// net/http handler around the same os/exec, are reported for context.
func BenchmarkExecTrue(b *testing.B) {
	ts := newTestServer(b, nil)
	ts.sandbox("bench")
	const path, body = "/v1/sandboxes/bench/exec", `{"argv":["true"]}`
	addr := strings.TrimPrefix(ts.url, "http://")
	// Context: the floor of any net/http server on this machine, a bare handler that
	// runs the same os/exec (output captured, as ours) behind the same kinds of client.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		var stdout, stderr bytes.Buffer
		c := exec.Command("true")
		c.Stdout, c.Stderr = &stdout, &stderr
		_ = c.Run()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"exit_code":0,"stdout":"","stderr":""}`)
	}))
	defer bare.Close()
	stdClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer stdClient.CloseIdleConnections()
	post := func(url, token string) error {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := stdClient.Do(req)
		if err != nil {
			return err
		}
		return drainOK(resp)
	}
	ours := newKeepAliveClient(b, addr, "POST", path, testToken, body)
	bareKA := newKeepAliveClient(b, strings.TrimPrefix(bare.URL, "http://"), "POST", "/", "", body)

	// Each round times every way once, in an order rotated by one each round, so each
	// follows each of the others equally often: what ran just before (a fork, an HTTP
	// exchange) changes how warm the other vCPU is.
	const rounds = 300
	ways := []func() error{
		func() error { return exec.Command("true").Run() },
		ours.do,
		bareKA.do,
		func() error { return post(ts.url+path, testToken) },
		func() error { return post(bare.URL, "") },
	}
	took := interleave(b, rounds, ways)
	raw := float64(p50(took[0]))
	b.ReportMetric(raw/1e3, "raw-p50-µs")
	b.ReportMetric(float64(p50(took[1]))/1e3, "http-p50-µs")
	b.ReportMetric(float64(p50(took[1]))/raw, "p50-ratio")
	b.ReportMetric(float64(p50(took[2]))/raw, "bare-p50-ratio")
	b.ReportMetric(float64(p50(took[3]))/raw, "std-client-p50-ratio")
	b.ReportMetric(float64(p50(took[4]))/raw, "std-client-bare-p50-ratio")

	// Throughput: short phases of 8 concurrent clients, each way in turn in a rotated
	// order, so a change in the machine's load hits them alike.
	const clients, perClient, phases = 8, 10, 8
	kas, bareKAs := make([]*keepAliveClient, clients), make([]*keepAliveClient, clients)
	for c := range kas {
		kas[c] = newKeepAliveClient(b, addr, "POST", path, testToken, body)
		bareKAs[c] = newKeepAliveClient(b, strings.TrimPrefix(bare.URL, "http://"), "POST", "/", "", body)
	}
	phase := func(run func(client int) error) time.Duration { return clientPhase(b, clients, perClient, run) }
	tputs := []func(int) error{
		func(int) error { return exec.Command("true").Run() },
		func(c int) error { return kas[c].do() },
		func(int) error { return post(ts.url+path, testToken) },
		func(c int) error { return bareKAs[c].do() },
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
	b.ReportMetric(rate(total[1]), "http-8c-exec/s")
	b.ReportMetric(rate(total[1])/rate(total[0]), "8c-throughput-ratio")
	b.ReportMetric(rate(total[2])/rate(total[0]), "std-client-8c-throughput-ratio")
	// The floor of any HTTP server in front of an exec on this machine: the bare
	// handler's throughput against raw, and ours against it.
	b.ReportMetric(rate(total[3])/rate(total[0]), "bare-8c-throughput-ratio")
	b.ReportMetric(rate(total[1])/rate(total[3]), "8c-throughput/bare")
}

const ptyBytes = 64 << 20

// rawPTYRead reads the whole output of cmd through a PTY, as fast as Go can.
func rawPTYRead(tb testing.TB, cmd string) (int64, time.Duration) {
	c := exec.Command("sh", "-c", cmd)
	start := time.Now()
	f, err := pty.StartWithSize(c, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		m, err := f.Read(buf)
		n += int64(m)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EIO) {
				tb.Fatal(err)
			}
			break
		}
	}
	_ = c.Wait()
	return n, time.Since(start)
}

// BenchmarkPTYToWebSocket reads 64 MiB of PTY output over a WebSocket, against a raw
// read of the same PTY output in the same run: first on the machine as it is, then with
// every CPU kept busy by a spinning goroutine (burnCPU, stopped at the end of that
// phase), which is where a client used to fall a ring behind and be sent a gap. It
// reports the throughput ratio and the bytes lost (sent as gaps) of each phase; the
// live stream's backpressure keeps the losses at 0.
func BenchmarkPTYToWebSocket(b *testing.B) {
	// The default ring (1 MiB): a ring as large as the output would measure the page
	// faults of 64 MiB of fresh memory, which cost more than the copying here.
	ts := newTestServer(b, nil)
	ts.sandbox("bench")
	for _, loaded := range []bool{false, true} {
		raw, ours, lost := ptyToWebSocket(b, ts, loaded)
		prefix := ""
		if loaded {
			prefix = "loaded-"
		}
		b.ReportMetric(lost, prefix+"lost-bytes")
		b.ReportMetric(raw, prefix+"raw-MiB/s")
		b.ReportMetric(ours, prefix+"ws-MiB/s")
		b.ReportMetric(ours/raw, prefix+"throughput-ratio")
	}
}

// ptyToWebSocket alternates raw and WebSocket reads of 64 MiB three times each, so a
// change in the machine's load hits both, with CPU load when loaded, and returns their
// rates in MiB/s and the bytes the WebSocket client lost.
func ptyToWebSocket(b *testing.B, ts *testServer, loaded bool) (raw, ours, lost float64) {
	cmd := "head -c 67108864 /dev/zero"
	if loaded {
		stop := burnCPU()
		defer stop()
	}
	const rounds = 3
	var rawN, ourN, gaps int64
	var rawD, ourD time.Duration
	for i := 0; i < rounds; i++ {
		n, d := rawPTYRead(b, cmd)
		if n != ptyBytes {
			b.Fatalf("raw read %d bytes, want %d", n, ptyBytes)
		}
		rawN, rawD = rawN+n, rawD+d
		n, g, d := wsPTYRead(b, ts, cmd)
		ourN, gaps, ourD = ourN+n, gaps+g, ourD+d
	}
	return float64(rawN) / rawD.Seconds() / (1 << 20), float64(ourN) / ourD.Seconds() / (1 << 20), float64(gaps)
}

// wsPTYRead runs cmd as a PTY process and reads all its output over a WebSocket. It
// returns the bytes received, the bytes reported as gaps and the time from the create
// request to the exit message, less the 200 ms the command waits so the client can
// attach first.
func wsPTYRead(b *testing.B, ts *testServer, cmd string) (n, gaps int64, d time.Duration) {
	start := time.Now()
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/bench/processes",
		map[string]any{"command": "sleep 0.2; " + cmd, "pty": map[string]int{"cols": 80, "rows": 24}}).json(b, &p)
	c := ts.dialWS("/v1/sandboxes/bench/processes/" + p.ID + "/ws?offset=0")
	defer c.conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Read each message into one reused buffer, as the raw baseline does: conn.Read
	// would allocate and grow a slice per message, costing the client more than the
	// server spends.
	buf := make([]byte, 64<<10)
	for {
		typ, r, err := c.conn.Reader(ctx)
		if err != nil {
			break
		}
		if typ == websocket.MessageBinary {
			m, err := io.CopyBuffer(io.Discard, r, buf)
			if err != nil {
				break
			}
			n += m
			continue
		}
		data, err := io.ReadAll(r)
		if err != nil {
			break
		}
		var m wsControl
		_ = json.Unmarshal(data, &m)
		if m.Type == "gap" {
			gaps += *m.To - *m.From
		}
		if bytes.Contains(data, []byte(`"exit"`)) {
			break
		}
	}
	d = time.Since(start) - 200*time.Millisecond
	if n+gaps != ptyBytes {
		b.Fatalf("got %d bytes and %d in gaps over WS, want %d", n, gaps, ptyBytes)
	}
	return n, gaps, d
}

// rawEchoer returns a function that times one byte written to a PTY running cat
// coming back (the tty echo), and a function that ends cat.
func rawEchoer(tb testing.TB) (round func() time.Duration, stop func()) {
	c := exec.Command("cat")
	f, err := pty.Start(c)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 4096)
	round = func() time.Duration {
		start := time.Now()
		if _, err := f.Write([]byte("a")); err != nil {
			tb.Fatal(err)
		}
		if _, err := f.Read(buf); err != nil {
			tb.Fatal(err)
		}
		return time.Since(start)
	}
	return round, func() { _ = c.Process.Kill(); _ = c.Wait(); f.Close() }
}

func BenchmarkKeystrokeEcho(b *testing.B) {
	ts := newTestServer(b, nil)
	ts.sandbox("bench")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/bench/processes",
		map[string]any{"command": "cat", "pty": map[string]int{"cols": 80, "rows": 24}}).json(b, &p)
	c := ts.dialWS("/v1/sandboxes/bench/processes/" + p.ID + "/ws")
	c.readUntil(b, 10*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	// Raw and WebSocket rounds alternate, so both see the same machine load.
	const rounds = 500
	rawRound, stopRaw := rawEchoer(b)
	defer stopRaw()
	ctx := context.Background()
	var raw, ours []time.Duration
	for i := 0; i < rounds; i++ {
		raw = append(raw, rawRound())
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
				break
			}
		}
		ours = append(ours, time.Since(start))
	}
	b.ReportMetric(float64(p50(raw).Microseconds()), "raw-echo-p50-µs")
	b.ReportMetric(float64(p50(ours).Microseconds()), "ws-echo-p50-µs")
	b.ReportMetric(float64((p50(ours) - p50(raw)).Microseconds()), "added-p50-µs")
	// The p50 of the per-round differences: each WebSocket round against the raw round
	// just before it, which saw the same moment's load.
	added := make([]time.Duration, rounds)
	for i := range added {
		added[i] = ours[i] - raw[i]
	}
	b.ReportMetric(float64(p50(added).Microseconds()), "paired-added-p50-µs")
	// Context: one WebSocket message round trip on loopback with no PTY or process,
	// the transport's share of the added time.
	b.ReportMetric(float64(p50(wsRoundTrips(b, rounds)).Microseconds()), "bare-ws-rtt-p50-µs")

	// Enter → command output, through a shell on the same terminal path.
	ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/bench/terminals/enter", map[string]any{})
	t := ts.dialWS("/v1/sandboxes/bench/terminals/enter/ws")
	t.send(b, websocket.MessageBinary, []byte("PS1='$ '; stty -echo\r"))
	t.readUntil(b, 10*time.Second, func(c *wsClient) bool { return strings.Count(c.output.String(), "$ ") >= 1 })
	var enter []time.Duration
	for i := 0; i < 100; i++ {
		t.output.Reset()
		start := time.Now()
		t.send(b, websocket.MessageBinary, []byte("echo ok\r"))
		t.readUntil(b, 10*time.Second, func(c *wsClient) bool { return strings.Contains(c.output.String(), "ok\r\n") })
		enter = append(enter, time.Since(start))
	}
	b.ReportMetric(float64(p50(enter).Microseconds()), "enter-to-output-p50-µs")
}

func BenchmarkTerminalFirstByte(b *testing.B) {
	ts := newTestServer(b, nil)
	ts.sandbox("bench")
	const rounds = 40
	var raw, ours []time.Duration
	for i := 0; i < rounds; i++ {
		start := time.Now()
		c := exec.Command("bash", "--norc", "-i")
		c.Env = append(os.Environ(), "TERM=xterm-256color", "PS1=$ ")
		f, err := pty.Start(c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Read(make([]byte, 1024)); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(start))
		_ = c.Process.Kill()
		_ = c.Wait()
		f.Close()

		id := "t" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		start = time.Now()
		ts.must(http.StatusCreated, "PUT", "/v1/sandboxes/bench/terminals/"+id, map[string]any{})
		w := ts.dialWS("/v1/sandboxes/bench/terminals/" + id + "/ws")
		w.readUntil(b, 10*time.Second, func(c *wsClient) bool { return c.output.Len() > 0 })
		ours = append(ours, time.Since(start))
		w.conn.CloseNow()
		ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/bench/terminals/"+id, nil)
	}
	b.ReportMetric(float64(p50(raw).Microseconds()), "raw-pty-bash-first-byte-p50-µs")
	b.ReportMetric(float64(p50(ours).Microseconds()), "create+attach+first-byte-p50-µs")
	b.ReportMetric(float64(p50(ours))/float64(p50(raw)), "p50-ratio")
}

// BenchmarkExecWithGuardPlugin compares exec over HTTP with and without the guard
// policy plugin deciding every request (issue figure: ≤ 1.05× without).
func BenchmarkExecWithGuardPlugin(b *testing.B) {
	plain := newTestServer(b, nil)
	guarded := newTestServer(b, &serverOptions{policyFile: examplePlugin(b, "guard")})
	for _, ts := range []*testServer{plain, guarded} {
		ts.sandbox("bench")
	}
	body := `{"argv":["true"]}`
	const rounds = 300
	var without, with []time.Duration
	timed := func(ts *testServer) time.Duration {
		start := time.Now()
		ts.must(http.StatusOK, "POST", "/v1/sandboxes/bench/exec", body)
		return time.Since(start)
	}
	for i := 0; i < rounds; i++ { // alternating which goes first
		if i%2 == 0 {
			without = append(without, timed(plain))
			with = append(with, timed(guarded))
		} else {
			with = append(with, timed(guarded))
			without = append(without, timed(plain))
		}
	}
	b.ReportMetric(float64(p50(without).Microseconds()), "plain-p50-µs")
	b.ReportMetric(float64(p50(with).Microseconds()), "guard-p50-µs")
	b.ReportMetric(float64(p50(with))/float64(p50(without)), "p50-ratio")
}

// wsRoundTrips measures a bare WebSocket echo on loopback with coder/websocket.
func wsRoundTrips(tb testing.TB, rounds int) []time.Duration {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil || c.Write(r.Context(), typ, data) != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseNow()
	out := make([]time.Duration, 0, rounds)
	for i := 0; i < rounds; i++ {
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageBinary, []byte("a")); err != nil {
			tb.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			tb.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// clientPhase runs run perClient times on each of clients goroutines at once and
// returns how long the whole phase took; the first error fails b.
func clientPhase(b *testing.B, clients, perClient int, run func(client int) error) time.Duration {
	var failed atomic.Pointer[error]
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Go(func() {
			for i := 0; i < perClient; i++ {
				if err := run(c); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return time.Since(start)
}
