package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// The sizes of a WebSocket connection's read and write buffers, which an idle client
// holds on to (net/http's are 4 KiB each). Frames from clients are keystrokes and
// controls, a few bytes each; a larger frame is read straight into its message. A
// frame to a client is its header and payload: one write while they fit in the
// buffer (an echo, a prompt, a line of output), and a write of the header with the
// payload's start, then one of the rest, for the large chunks of bulk output.
const (
	wsReadBufferBytes  = 256
	wsWriteBufferBytes = 512
)

// smallBufferWriter hands websocket.Accept a hijacked connection with small buffers.
// Hijack records the connection in hijacked, which outlives the writer: the writer
// holds net/http's response (the request and 8 KiB of buffers), the connection does not.
type smallBufferWriter struct {
	http.ResponseWriter
	hijacked *clientConn
}

// clientConn is a hijacked client connection and the buffered reader websocket reads
// it through.
type clientConn struct {
	conn net.Conn
	br   *bufio.Reader
}

// Hijack implements http.Hijacker: it takes the connection from net/http and wraps it
// in small buffers (wsReadBufferBytes, wsWriteBufferBytes), keeping what the client sent after its request (already in
// net/http's buffer) at the front of the new one.
func (w *smallBufferWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	early, _ := brw.Reader.Peek(brw.Reader.Buffered())
	early = bytes.Clone(early)
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(early), conn), max(wsReadBufferBytes, len(early)))
	_, _ = r.Peek(len(early)) // into the buffer: websocket.Accept takes Buffered() bytes first
	w.hijacked = &clientConn{conn: conn, br: r}
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, wsWriteBufferBytes)), nil
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w *smallBufferWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// waitReadable returns once the client has sent something not yet read (or closed the
// connection), or the connection passed its read deadline. An idle client's reader
// waits here rather than deep inside websocket's Read, so the stack it keeps is a few
// frames deep and the garbage collector shrinks it to the minimum.
//
// It peeks at the socket before it waits: bytes may have arrived after the last read
// and their readiness edge been consumed, and waiting for another edge would then hang.
// Once the poller wakes it, it returns without a second look (a syscall less per
// keystroke); after a rare spurious wake-up the reader just waits in websocket's Read.
func (c *clientConn) waitReadable() error {
	if c.br.Buffered() > 0 {
		return nil
	}
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return nil // let websocket's Read do the waiting
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	looked := false
	return raw.Read(func(fd uintptr) bool {
		if looked {
			return true // woken by the poller: the read that follows finds the bytes
		}
		looked = true
		var one [1]byte
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR)
	})
}
