package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// HTTP server deadlines (Config.ReadHeaderTimeout, BodyReadTimeout, IdleTimeout,
// MaxHeaderBytes).
//
// net/http offers one ReadTimeout for headers and body together, which would cut a
// 16 MiB upload on a slow link and does nothing for a silent client once its handler
// runs. Instead:
//
//  1. ReadHeaderTimeout bounds the headers, IdleTimeout a kept-alive connection's wait
//     for its next request, MaxHeaderBytes the headers' size (431 past it).
//  2. A request with a body gets a read deadline of BodyReadTimeout, pushed back before
//     every read of the body (deadlineBody): a client that keeps sending is never cut
//     off, one that stops for BodyReadTimeout is. Once the body is read to its end the
//     deadline is cleared, so a long exec after it, and net/http's check for a client
//     that hangs up, are not cut off. Requests without a body (SSE and WebSocket among
//     them) get no read deadline at all.
//  3. A response other than a stream (SSE and WebSocket have their own) gets a write
//     deadline of ResponseWriteTimeout when it starts writing, pushed back as it goes
//     (statusRecorder.arm), so a client that stops reading a large answer frees its
//     connection and goroutine. It is cleared when the next request on the connection
//     starts: net/http keeps a connection's deadline from one request to the next.
//  4. An error answered before the body was read (a 401, a 400 from the path, a 413) is
//     sent with Connection: close and a read deadline of unreadBodyGrace: net/http would
//     otherwise try to read and discard the unread body before it reads the next
//     request, and a client that never sends it would hold the connection forever.
//  5. Except that a body the client is sending because it was told to (it sent
//     Expect: 100-continue and net/http answered 100 Continue when the handler began
//     to read) is read on and thrown away after the error was sent, until it ends or
//     for unreadBodyGrace. net/http would close such a connection at once: its own
//     wait before closing one whose body was cut short does not recognise the body
//     behind a 100-continue. A close with unread data is a TCP reset, and a client
//     still sending gets it as a failed write, which may beat the answer: Go's
//     transport, as a forwarding node uses, then reports the write error and loses
//     the answer (an owner's 429 for a full workspace became a failed forward).
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultBodyReadTimeout   = 30 * time.Second
	// defaultResponseWriteTimeout bounds each wait of a response for its client.
	defaultResponseWriteTimeout = 30 * time.Second
	defaultIdleTimeout          = 2 * time.Minute
	defaultMaxHeaderBytes       = 64 << 10
	// unreadBodyGrace is how long, after an error answered before the body was read,
	// net/http may go on reading (and discarding) up to 256 KiB of that body. A client
	// that is sending it is not reset while it still writes; a silent one holds its
	// connection no longer than this. It also bounds step 5's reading.
	unreadBodyGrace = time.Second
)

// withBodyDeadline gives a request that has a body the read deadlines of step 2 above.
func (s *Server) withBodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &deadlineBody{body: r.Body, rc: http.NewResponseController(w), timeout: s.cfg.BodyReadTimeout,
			continued: strings.EqualFold(r.Header.Get("Expect"), "100-continue")}
		b.extend()
		// A copy: net/http keeps the original, whose Body must stay its own type
		// for its handling of unread bodies after the handler.
		r = r.WithContext(r.Context())
		r.Body = b
		next.ServeHTTP(w, r)
		b.drainAfterError()
	})
}

// deadlineBody is a request body whose every read gets a fresh read deadline on the
// connection; reaching the end clears it. Reads are not concurrent (an http.Request's
// body is read by one goroutine); eof may be asked from another.
type deadlineBody struct {
	body      io.ReadCloser
	rc        *http.ResponseController
	timeout   time.Duration
	continued bool // the client sent Expect: 100-continue

	mu      sync.Mutex
	eof     bool
	started bool // some of it was read: a 100-continue client was told to send it
	drain   bool // an error was answered before its end: read the rest (step 5)
}

func (b *deadlineBody) extend() { _ = b.rc.SetReadDeadline(time.Now().Add(b.timeout)) }

// Read implements io.Reader.
func (b *deadlineBody) Read(p []byte) (int, error) {
	b.extend()
	n, err := b.body.Read(p)
	if n > 0 {
		b.mu.Lock()
		b.started = true
		b.mu.Unlock()
	}
	switch {
	case errors.Is(err, io.EOF):
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errorf(http.StatusBadRequest, codeInvalidArgument,
			"request body stalled: nothing of it arrived for %s", b.timeout)
	}
	return n, err
}

// Close implements io.Closer.
func (b *deadlineBody) Close() error { return b.body.Close() }

// readToEnd reports whether the body was read to its end.
func (b *deadlineBody) readToEnd() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// closeIfBodyUnread is step 4 above: before an error is written, a request whose body
// was not read to its end is answered with Connection: close, and its connection's
// read deadline is set to unreadBodyGrace from now so that net/http does not wait long
// for the rest of the body. A 100-continue body already on its way is marked for step 5.
func closeIfBodyUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	if b, ok := r.Body.(*deadlineBody); ok && b.readToEnd() {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyGrace))
	if b, ok := r.Body.(*deadlineBody); ok {
		b.mu.Lock()
		b.drain = b.continued && b.started
		b.mu.Unlock()
	}
}

// drainAfterError is step 5 above, after the handler returned: when an error was
// answered to a 100-continue client whose body was being sent, the answer is flushed
// and the rest of the body read and thrown away, until it ends or for unreadBodyGrace
// (the deadline is not pushed back by these reads).
func (b *deadlineBody) drainAfterError() {
	b.mu.Lock()
	drain := b.drain && !b.eof
	b.mu.Unlock()
	if !drain {
		return
	}
	_ = b.rc.Flush()
	_ = b.rc.SetReadDeadline(time.Now().Add(unreadBodyGrace))
	_, _ = io.Copy(io.Discard, b.body)
}
