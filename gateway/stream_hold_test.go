package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/actor"
)

// seqBytes is the first n bytes that `seq 1 N` prints for a large N.
func seqBytes(n int) []byte {
	b := make([]byte, 0, n+16)
	for i := 1; len(b) < n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

// seqCommand prints the first n bytes of `seq`, once the file "go" exists in the
// workspace, so that readers can attach first. On a PTY it puts the terminal in raw
// mode first (no echo, no \n → \r\n).
func seqCommand(n int, pty bool) string {
	cmd := fmt.Sprintf("while [ ! -e go ]; do sleep 0.01; done; seq 1 100000000 | head -c %d", n)
	if pty {
		cmd = "stty raw -echo; " + cmd
	}
	return cmd
}

// burnCPU loads every CPU with a spinning goroutine until the returned function is
// called (and returns once they stopped).
func burnCPU() (stop func()) {
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range goruntime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 0
			for !quit.Load() {
				for i := range 1 << 16 {
					x += i
				}
			}
			_ = x
		})
	}
	return func() { quit.Store(true); wg.Wait() }
}

// streamCheck compares what a reader gets with want, byte for byte.
type streamCheck struct {
	want []byte
	got  int
	gaps []string
	err  error
}

func (c *streamCheck) output(b []byte) {
	if c.err != nil {
		return
	}
	if c.got+len(b) > len(c.want) || !bytes.Equal(b, c.want[c.got:c.got+len(b)]) {
		c.err = fmt.Errorf("bytes %d..%d differ from the output", c.got, c.got+len(b))
	}
	c.got += len(b)
}

// readWSStream reads a WebSocket attach to its close, checking the output.
func readWSStream(ctx context.Context, conn *websocket.Conn, c *streamCheck) (exited bool, err error) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return exited, nil
			}
			return exited, err
		}
		if typ == websocket.MessageBinary {
			c.output(data)
			continue
		}
		var m wsControl
		if err := json.Unmarshal(data, &m); err != nil {
			return exited, err
		}
		switch m.Type {
		case "gap":
			c.gaps = append(c.gaps, fmt.Sprintf("[%d,%d)", *m.From, *m.To))
			c.got = int(*m.To)
		case "exit":
			exited = true
		}
	}
}

// readSSEStream reads an SSE output stream to its end, checking the output.
func readSSEStream(ctx context.Context, ts *testServer, path string, c *streamCheck) (exited bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: ") && name == "output":
			var o outputEventJSON
			if err := json.Unmarshal([]byte(line[len("data: "):]), &o); err != nil {
				return false, err
			}
			b, err := base64.StdEncoding.DecodeString(o.Data)
			if err != nil {
				return false, err
			}
			c.output(b)
		case strings.HasPrefix(line, "data: ") && name == "gap":
			c.gaps = append(c.gaps, line)
		case name == "exit":
			exited = true
		}
	}
	return exited, sc.Err()
}

// TestLiveStreamsLossless: a WebSocket reader and an SSE reader of one process, on a
// machine whose CPUs are all busy, each get every byte of 24 MiB of output (through a
// 1 MiB ring) with no gap, then the exit; on pipes and on a PTY.
func TestLiveStreamsLossless(t *testing.T) {
	t.Parallel()
	size := 24 << 20
	if testing.Short() {
		size = 8 << 20
	}
	want := seqBytes(size)
	for _, tc := range []struct {
		name string
		pty  bool
	}{
		{name: "pipes"},
		{name: "pty", pty: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The readers are live but share the CPUs with burnCPU (and, in CI, with
			// other packages' tests): one can be starved of the CPU for more than the
			// default 5 s bound, which would count it as stopped. This test is about
			// live readers; the bound itself is TestLiveStreamStalledReader's. For the
			// same reason the node's lease is long: a renewal (a raft commit, an fsync)
			// starved past the default 3 s fenced the node, which ends its sandboxes'
			// streams; one node has no one to fail over to anyway.
			ts := newTestServer(t, &serverOptions{
				streamHoldBound: time.Minute,
				config:          func(c *Config) { c.LeaseTTL = time.Minute },
			})
			ts.sandbox("lossless")
			body := map[string]any{"command": seqCommand(size, tc.pty)}
			if tc.pty {
				body["pty"] = map[string]int{"cols": 80, "rows": 24}
			}
			var p processJSON
			ts.must(http.StatusCreated, "POST", "/v1/sandboxes/lossless/processes", body).json(t, &p)
			path := "/v1/sandboxes/lossless/processes/" + p.ID
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			ws := ts.dialWS(path + "/ws?offset=0")
			ws.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
			var wsCheck, sseCheck streamCheck
			wsCheck.want, sseCheck.want = want, want
			wsCheck.got = ws.output.Len()
			var wsExit, sseExit bool
			var wsErr, sseErr error
			var wg sync.WaitGroup
			wg.Go(func() { wsExit, wsErr = readWSStream(ctx, ws.conn, &wsCheck) })
			wg.Go(func() { sseExit, sseErr = readSSEStream(ctx, ts, path+"/output?offset=0", &sseCheck) })
			eventually(t, 30*time.Second, "both readers attached", func() bool {
				n, err := ts.srv.node.Attached(ctx, "lossless")
				return err == nil && n == 2
			})
			stop := burnCPU()
			began := time.Now()
			ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/lossless/files?path=go", "")
			wg.Wait()
			stop()
			t.Logf("%d MiB in %v", size>>20, time.Since(began).Round(time.Millisecond))
			for _, r := range []struct {
				name   string
				c      *streamCheck
				exited bool
				err    error
			}{{"websocket", &wsCheck, wsExit, wsErr}, {"sse", &sseCheck, sseExit, sseErr}} {
				switch {
				case r.err != nil:
					t.Errorf("%s: %v after %d bytes", r.name, r.err, r.c.got)
				case len(r.c.gaps) > 0:
					t.Errorf("%s: sent gaps %v", r.name, r.c.gaps)
				case r.c.err != nil:
					t.Errorf("%s: %v", r.name, r.c.err)
				case r.c.got != size || !r.exited:
					t.Errorf("%s: %d of %d bytes, exit %v", r.name, r.c.got, size, r.exited)
				}
			}
		})
	}
}

// TestLiveStreamStalledReader: a WebSocket reader that stops reading holds its
// process back for the hold bound only. The process then runs to its end, another
// reader getting everything without a gap; the stalled reader, reading again, gets
// what its socket held, a gap, and the rest.
func TestLiveStreamStalledReader(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{
		// Long enough that the active reader, descheduled on a loaded machine, is
		// never taken for a stalled one; short enough to keep the test quick.
		streamHoldBound: 2 * time.Second,
		wsWriteTimeout:  5 * time.Minute, // not closed for being slow: skipped
		limits:          actor.Budget{OutputBufferBytes: 64 << 10},
	})
	ts.sandbox("stall")
	const size = 32 << 20 // past the ring and every socket buffer on the way
	want := seqBytes(size)
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/stall/processes",
		map[string]any{"command": seqCommand(size, false)}).json(t, &p)
	path := "/v1/sandboxes/stall/processes/" + p.ID + "/ws?offset=0"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	stalled, active := ts.dialWS(path), ts.dialWS(path)
	for _, c := range []*wsClient{stalled, active} {
		c.readUntil(t, 30*time.Second, func(c *wsClient) bool { return c.control("ready") != nil })
	}
	activeCheck := streamCheck{want: want}
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/stall/files?path=go", "")
	exited, err := readWSStream(ctx, active.conn, &activeCheck)
	switch {
	case err != nil:
		t.Fatalf("active reader: %v after %d bytes", err, activeCheck.got)
	case len(activeCheck.gaps) > 0 || activeCheck.err != nil || activeCheck.got != size || !exited:
		t.Fatalf("active reader: gaps %v, %v, %d of %d bytes, exit %v", activeCheck.gaps, activeCheck.err, activeCheck.got, size, exited)
	}

	stalledCheck := streamCheck{want: want}
	exited, err = readWSStream(ctx, stalled.conn, &stalledCheck)
	switch {
	case err != nil:
		t.Fatalf("stalled reader: %v", err)
	case stalledCheck.err != nil:
		t.Fatalf("stalled reader: %v", stalledCheck.err)
	case len(stalledCheck.gaps) != 1 || stalledCheck.got != size || !exited:
		t.Fatalf("stalled reader: gaps %v, ended at %d of %d, exit %v; want one gap", stalledCheck.gaps, stalledCheck.got, size, exited)
	}
	t.Logf("stalled reader's gap: %v", stalledCheck.gaps)
}

// TestSSEStalledReaderDropped: an SSE reader that sends its request and never reads
// is dropped once a write waits for the write timeout: its handler returns, and the
// sandbox no longer counts it as attached (nor the process as subscribed).
func TestSSEStalledReaderDropped(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{
		wsWriteTimeout:  500 * time.Millisecond,
		streamHoldBound: 200 * time.Millisecond,
	})
	ts.sandbox("ssestall")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ssestall/processes",
		map[string]any{"command": "yes sandgate-sse-stalled-reader"}).json(t, &p)
	addr := strings.TrimPrefix(ts.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	req := "GET /v1/sandboxes/ssestall/processes/" + p.ID + "/output HTTP/1.1\r\nHost: " + addr +
		"\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attached := func() int {
		n, err := ts.srv.node.Attached(ctx, "ssestall")
		if err != nil {
			t.Fatalf("Attached: %v", err)
		}
		return n
	}
	eventually(t, 30*time.Second, "the reader attached", func() bool { return attached() == 1 })
	began := time.Now()
	eventually(t, 60*time.Second, "the stalled reader dropped", func() bool { return attached() == 0 })
	t.Logf("dropped after %v", time.Since(began).Round(time.Millisecond))
	proc, err := ts.srv.node.Process(ctx, "ssestall", p.ID)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the subscription closed", func() bool { return proc.Attached() == 0 })
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/ssestall/processes/"+p.ID, nil)
}

// TestEventStreamStalledReaderDropped: an event-stream reader that sends its request
// and never reads is dropped once a write waits for the write timeout: the replay of a
// log larger than the socket buffers fills them, and the stream's handler returns.
func TestEventStreamStalledReaderDropped(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{wsWriteTimeout: 500 * time.Millisecond})
	ts.sandbox("evstall")
	blob := strings.Repeat("x", 16<<10)
	for range 500 { // 8 MiB of events, past any socket buffer
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/evstall/events",
			map[string]any{"type": "agent.blob", "data": map[string]string{"blob": blob}})
	}
	addr := strings.TrimPrefix(ts.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	req := "GET /v1/sandboxes/evstall/events/stream HTTP/1.1\r\nHost: " + addr +
		"\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	gauge := func() string {
		for _, line := range strings.Split(string(ts.must(http.StatusOK, "GET", "/metrics", nil).body), "\n") {
			if strings.HasPrefix(line, "sandgate_sse_clients ") {
				return strings.TrimPrefix(line, "sandgate_sse_clients ")
			}
		}
		return ""
	}
	eventually(t, 30*time.Second, "the reader streaming", func() bool { return gauge() == "1" })
	eventually(t, 60*time.Second, "the stalled reader dropped", func() bool { return gauge() == "0" })
}
