package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSmallBufferHijackKeepsEarlyBytes sends a request and, in the same write, bytes
// meant for after the upgrade: net/http has them in its buffer when the handler
// hijacks, and the small-buffer connection must still deliver them first.
func TestSmallBufferHijackKeepsEarlyBytes(t *testing.T) {
	t.Parallel()
	const early = "early bytes, sent with the request"
	got := make(chan string, 1)
	hijacked := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := smallBufferWriter{w}.Hijack()
		if err != nil {
			got <- "hijack: " + err.Error()
			return
		}
		defer conn.Close()
		n := brw.Reader.Buffered()
		close(hijacked)                // the client may send the rest now
		if n != len(early) && n != 0 { // 0: they had not arrived yet, also fine
			got <- "buffered " + strings.Repeat("?", n)
			return
		}
		// What websocket.Accept does with the reader: keep what is buffered, then
		// read the connection directly.
		b, _ := brw.Reader.Peek(brw.Reader.Buffered())
		brw.Reader.Reset(io.MultiReader(bytes.NewReader(b), conn))
		buf := make([]byte, len(early)+len(" and later ones"))
		_, err = io.ReadFull(brw.Reader, buf)
		if err != nil {
			got <- "read: " + err.Error()
			return
		}
		got <- string(buf)
		_, _ = brw.WriteString("bye")
		_ = brw.Flush()
	}))
	defer srv.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"+early); err != nil {
		t.Fatal(err)
	}
	// The rest comes once the handler has taken the connection, from the socket itself.
	select {
	case <-hijacked:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never hijacked")
	}
	if _, err := io.WriteString(c, " and later ones"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != early+" and later ones" {
			t.Fatalf("handler read %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler read nothing")
	}
	line, err := bufio.NewReader(c).ReadString('e')
	if err != nil || !strings.HasSuffix(line, "bye") {
		t.Fatalf("reply %q, %v", line, err)
	}
}
