package gateway

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawConn opens a plain TCP connection to ts; the test's cleanup closes it.
func rawConn(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readClosed reads c until the server closes it, within bound, and returns what came.
func readClosed(t *testing.T, c net.Conn, bound time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server did not close the connection within %v; got %q", bound, b)
	}
	return string(b) // a reset after the reply is a close too
}

// TestSilentBodyUnauthenticated: a request without a valid token that announces a body
// and never sends it gets its 401 at once, with Connection: close, and its connection
// is closed; today's net/http would wait for the body forever. The body read timeout
// is long here, so only answering before the body counts.
func TestSilentBodyUnauthenticated(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.BodyReadTimeout = time.Hour }})
	tests := []struct{ name, request string }{
		{"no token", "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"},
		{"wrong token", "PUT /v1/sandboxes/a/files?path=x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 1000\r\n\r\n"},
		{"chunked", "POST /v1/sandboxes/a/exec HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"bad id with token", "POST /v1/sandboxes/BAD/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\nContent-Length: 1000\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := rawConn(t, ts)
			if _, err := io.WriteString(c, tt.request); err != nil {
				t.Fatal(err)
			}
			got := readClosed(t, c, 10*time.Second)
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("reply %q: %v", got, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest || !resp.Close {
				t.Fatalf("reply %q: want 401 or 400 with Connection: close", got)
			}
		})
	}
}

// TestSilentBodyAuthenticated: an authenticated request whose body stops coming is cut
// off by the body read timeout, with a 400 that says so.
func TestSilentBodyAuthenticated(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.BodyReadTimeout = 200 * time.Millisecond }})
	ts.sandbox("sb1")
	c := rawConn(t, ts)
	req := "POST /v1/sandboxes/sb1/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\nContent-Length: 1000\r\n\r\n{\"command\":"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	got := readClosed(t, c, 10*time.Second)
	if !strings.HasPrefix(got, "HTTP/1.1 400") || !strings.Contains(got, "stalled") {
		t.Fatalf("reply %q: want 400 saying the body stalled", got)
	}
}

// TestSlowHeaders: a client that sends its headers slowly is cut off by the header
// timeout.
func TestSlowHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.ReadHeaderTimeout = 200 * time.Millisecond }})
	c := rawConn(t, ts)
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	readClosed(t, c, 10*time.Second) // the rest of the headers never comes
}

// TestSlowBodyKeepsGoing: an upload that keeps sending, though its whole takes many
// times the body read timeout, is not cut off; nor is a command that runs longer than
// that timeout after its body arrived.
func TestSlowBodyKeepsGoing(t *testing.T) {
	t.Parallel()
	// 16 chunks an eighth of the timeout apart: the body takes twice the timeout, and
	// each read still has most of it to spare on a loaded machine.
	const timeout, chunks = time.Second, 16
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.BodyReadTimeout = timeout }})
	ts.sandbox("sb1")
	pr, pw := io.Pipe()
	go func() {
		for i := range chunks {
			if _, err := fmt.Fprintf(pw, "chunk %d\n", i); err != nil {
				return
			}
			time.Sleep(timeout / 8) // the pace of a slow link, not synchronisation
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("PUT", ts.url+"/v1/sandboxes/sb1/files?path=slow.txt", pr)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("slow upload: status %d", resp.StatusCode)
	}
	if r := ts.must(http.StatusOK, "GET", "/v1/sandboxes/sb1/files?path=slow.txt", nil); strings.Count(string(r.body), "chunk") != chunks {
		t.Fatalf("uploaded %q", r.body)
	}
	var res execJSON
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/sb1/exec", map[string]any{"command": "sleep 2; echo done"}).json(t, &res)
	if res.Stdout != "done\n" {
		t.Fatalf("exec after its body: %+v", res)
	}
}

// TestHeaderLimit: headers over MaxHeaderBytes are refused with 431 in the error shape
// naming the limit, and far over it by net/http itself.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.MaxHeaderBytes = 4 << 10 }})
	// get sends a request with a header of size bytes and returns the answer.
	get := func(size int) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.url+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("x", size))
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := get(16 << 10); status != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, `"code":"too_large"`) || !strings.Contains(body, "4096") {
		t.Fatalf("status %d %s, want 431 too_large naming the limit", status, body)
	}
	// Far past the limit net/http refuses the headers before any handler.
	if status, _ := get(64 << 10); status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", status)
	}
	// Within it, a request goes through.
	if status, _ := get(2 << 10); status != http.StatusOK {
		t.Fatalf("status %d with headers within the limit, want 200", status)
	}
}

// TestResponseWriteDeadline: a client that asks for a large file and reads nothing
// frees its handler once the response write timeout passes; without the deadline the
// handler would wait on the full socket for as long as the client stays connected.
func TestResponseWriteDeadline(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, &serverOptions{config: func(c *Config) { c.ResponseWriteTimeout = 300 * time.Millisecond }})
	ts.sandbox("big")
	// More than the loopback socket buffers of both ends can hold.
	ts.must(http.StatusNoContent, "PUT", "/v1/sandboxes/big/files?path=f", strings.Repeat("x", maxFileBody))
	route := `route="GET /v1/sandboxes/{sb}/files"`
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		_ = rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET /v1/sandboxes/big/files?path=f HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	// The wrapper counts a request once its handler has returned.
	eventually(t, 20*time.Second, "the stalled download's handler to return", func() bool {
		r := ts.doToken(testAdminToken, "GET", "/metrics", nil)
		for _, line := range strings.Split(string(r.body), "\n") {
			if strings.HasPrefix(line, "sandgate_http_requests_total{") && strings.Contains(line, route) {
				return true
			}
		}
		return false
	})
	got, _ := io.ReadAll(c) // what the kernel buffered, then the close
	if len(got) >= maxFileBody {
		t.Fatalf("the client got all %d bytes: the server did not give up on it", len(got))
	}
}
