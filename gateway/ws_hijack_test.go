package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
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
		conn, brw, err := (&smallBufferWriter{ResponseWriter: w}).Hijack()
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

// TestWaitReadable checks the idle reader's wait: it returns for bytes that arrived
// after the last read (whose readiness edge the poller has already seen), for the
// peer's close, and for a read deadline, and it never returns while nothing came.
func TestWaitReadable(t *testing.T) {
	t.Parallel()
	conn, peer := tcpPair(t)
	cc := &clientConn{conn: conn, br: bufio.NewReaderSize(conn, 16)}
	wait := func() <-chan error {
		done := make(chan error, 1)
		go func() { done <- cc.waitReadable() }()
		return done
	}
	within := func(done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("waitReadable did not return")
			return nil
		}
	}

	// A byte read through the buffer, then one that is in the socket before the wait.
	if _, err := peer.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if b, err := cc.br.ReadByte(); err != nil || b != 'a' {
		t.Fatalf("read %q, %v", b, err)
	}
	if _, err := peer.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	waitArrived(t, conn)
	if err := within(wait()); err != nil {
		t.Fatalf("with a byte waiting: %v", err)
	}
	if b, err := cc.br.ReadByte(); err != nil || b != 'b' {
		t.Fatalf("read %q, %v", b, err)
	}

	// Nothing sent: the wait goes on until a deadline ends it.
	done := wait()
	select {
	case err := <-done:
		t.Fatalf("returned with nothing to read: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	_ = conn.SetReadDeadline(time.Unix(1, 0))
	if err := within(done); err == nil {
		t.Fatal("a passed deadline did not fail the wait")
	}
	_ = conn.SetReadDeadline(time.Time{})

	// The peer's close wakes it, and the next read sees EOF.
	peer.Close()
	if err := within(wait()); err != nil {
		t.Fatalf("after the peer closed: %v", err)
	}
	if _, err := cc.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("read after close: %v", err)
	}
}

// waitArrived waits, bounded, until conn has a byte to read, without reading it.
func waitArrived(t *testing.T, conn net.Conn) {
	t.Helper()
	raw, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		_ = raw.Control(func(fd uintptr) {
			var one [1]byte
			n, _, _ = syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the byte never arrived")
}

// tcpPair returns the two ends of a loopback TCP connection, closed when the test ends.
func tcpPair(t *testing.T) (conn, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	conn, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, peer
}
