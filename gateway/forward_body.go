package gateway

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// maxBufferedBody is the largest request body a forwarding node keeps in memory, so
// that a request held or refused with 421 can be sent again. A bigger body (a file
// upload) is streamed to the owner once, and sent again only if none of it went.
const maxBufferedBody = 1 << 20

// replayBody is the body of a request on its way to the owner: buffered whole, or
// streamed once. A nil *replayBody is a request whose body nobody read yet. It is
// used by the request's goroutine, and read by the transport's.
type replayBody struct {
	buf    []byte         // the whole body, when buffered
	stream *countedReader // a bigger body, when not
}

// readBody reads r's body for forwarding: up to maxBufferedBody into memory, beyond
// that into a streamed body whose first bytes were read already.
func readBody(r *http.Request) (*replayBody, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return &replayBody{buf: []byte{}}, nil
	}
	var prefix []byte
	if r.ContentLength < 0 || r.ContentLength <= maxBufferedBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBufferedBody+1))
		if err != nil {
			return nil, err
		}
		if len(b) <= maxBufferedBody {
			return &replayBody{buf: b}, nil
		}
		prefix = b
	}
	return &replayBody{stream: &countedReader{r: io.MultiReader(bytes.NewReader(prefix), r.Body)}}, nil
}

// streamed reports whether the body is streamed rather than buffered.
func (b *replayBody) streamed() bool { return b != nil && b.stream != nil }

// ready reports whether the body can be sent (again): it is buffered, or none of the
// streamed one was sent yet.
func (b *replayBody) ready() bool { return b == nil || b.stream == nil || b.stream.n.Load() == 0 }

// attach makes out's body a fresh copy of this one, for one attempt.
func (b *replayBody) attach(out *http.Request) {
	switch {
	case b == nil:
	case b.stream != nil:
		out.Body = io.NopCloser(b.stream) // the transport closes it; the server owns r.Body
		out.GetBody = nil
	default:
		buf := b.buf
		out.ContentLength = int64(len(buf))
		out.Body = io.NopCloser(bytes.NewReader(buf))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
		if len(buf) == 0 {
			out.Body, out.GetBody = http.NoBody, nil
		}
	}
}

// restore returns r ready to be served here: with the buffered body put back (read to
// its end as far as the connection is concerned), or the streamed one.
func (b *replayBody) restore(w http.ResponseWriter, r *http.Request, timeout time.Duration) *http.Request {
	if b == nil {
		return r
	}
	r = r.WithContext(r.Context())
	if b.stream != nil {
		r.Body = io.NopCloser(b.stream)
		return r
	}
	r.ContentLength = int64(len(b.buf))
	r.Body = &deadlineBody{body: io.NopCloser(bytes.NewReader(b.buf)), rc: http.NewResponseController(w), timeout: timeout, eof: true}
	return r
}

// countedReader counts the bytes read through it.
type countedReader struct {
	r io.Reader
	n atomic.Int64
}

// Read implements io.Reader.
func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
