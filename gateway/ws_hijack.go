package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// wsBufferBytes is the size of a WebSocket connection's read and write buffers. Frames
// to clients are written straight from the output ring (large payloads skip the
// buffer) and frames from clients are keystrokes and controls, so 1 KiB each serves as
// well as net/http's 4 KiB, which an idle client would otherwise hold on to.
const wsBufferBytes = 1 << 10

// smallBufferWriter hands websocket.Accept a hijacked connection with small buffers.
type smallBufferWriter struct {
	http.ResponseWriter
}

// Hijack implements http.Hijacker: it takes the connection from net/http and wraps it
// in wsBufferBytes buffers, keeping what the client sent after its request (already in
// net/http's buffer) at the front of the new one.
func (w smallBufferWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
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
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(early), conn), max(wsBufferBytes, len(early)))
	_, _ = r.Peek(len(early)) // into the buffer: websocket.Accept takes Buffered() bytes first
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, wsBufferBytes)), nil
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w smallBufferWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
