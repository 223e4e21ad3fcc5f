package gateway

import (
	"context"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkOpenCodeConnect compares, in the same run, the OpenCode connect stream
// (text frames, UTF-16 counting, the cursor frame) with sandgate's own process
// WebSocket (binary frames) on the same 16 MiB of mixed ASCII, accented, CJK and emoji
// PTY output, rounds interleaved; it reports each rate and their ratio, and
// "cpu-ratio": the median over rounds of the CPU time this process (server and
// client) spent on the process WebSocket's stream over the connect stream's (1 is as
// cheap; the processes in the sandbox are not counted).
func BenchmarkOpenCodeConnect(b *testing.B) {
	ts := newTestServer(b, nil)
	ts.sandbox("bench")
	const size = 16 << 20
	cmd := "sleep 0.2; yes 'héllo wörld 世界 😀 abc' | head -c " + itoa(size)
	ws := func() error {
		var p processJSON
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/bench/processes",
			map[string]any{"command": cmd, "pty": map[string]int{"cols": 80, "rows": 24}}).json(b, &p)
		return readAll(b, ts.url+"/v1/sandboxes/bench/processes/"+p.ID+"/ws?offset=0", size, websocket.MessageBinary)
	}
	oc := func() error {
		var p ptyJSON
		ts.must(http.StatusOK, "POST", "/v1/sandboxes/bench/opencode/pty",
			map[string]any{"command": "sh", "args": []string{"-c", cmd}}).json(b, &p)
		return readAll(b, ts.url+"/v1/sandboxes/bench/opencode/pty/"+p.ID+"/connect", size, websocket.MessageText)
	}
	var wsCPU, ocCPU []time.Duration
	timed := func(f func() error, cpu *[]time.Duration) func() error {
		return func() error {
			c0 := processCPU()
			err := f()
			*cpu = append(*cpu, processCPU()-c0)
			return err
		}
	}
	rounds := max(b.N, 3)
	took := interleave(b, rounds, []func() error{timed(ws, &wsCPU), timed(oc, &ocCPU)})
	rate := func(d []time.Duration) float64 {
		return float64(size) / (p50(d) - 200*time.Millisecond).Seconds() / (1 << 20)
	}
	b.ReportMetric(rate(took[0]), "ws-MiB/s")
	b.ReportMetric(rate(took[1]), "opencode-MiB/s")
	b.ReportMetric(rate(took[1])/rate(took[0]), "throughput-ratio")
	ratios := make([]float64, len(wsCPU))
	for i := range ratios {
		ratios[i] = float64(wsCPU[i]) / float64(ocCPU[i])
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "cpu-ratio")
}

// processCPU returns the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readAll reads a stream's output frames of typ until the server closes, and checks
// it got at least want bytes (a PTY turns \n into \r\n).
func readAll(b *testing.B, url string, want int64, typ websocket.MessageType) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+url[len("http"):], &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	buf := make([]byte, 64<<10)
	var n int64
	for {
		t, r, err := conn.Reader(ctx)
		if err != nil {
			break // the close after the exit
		}
		m, err := io.CopyBuffer(io.Discard, r, buf)
		if err != nil {
			return err
		}
		if t == typ {
			n += m
		}
	}
	if n < want {
		b.Fatalf("%s: %d bytes, want at least %d", url, n, want)
	}
	return nil
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(dst []byte, n int) []byte {
	if n >= 10 {
		dst = appendInt(dst, n/10)
	}
	return append(dst, byte('0'+n%10))
}
