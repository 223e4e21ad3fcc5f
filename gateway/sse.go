package gateway

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sseHeartbeat is how often an idle SSE stream gets a comment line, so proxies and
// clients can tell a quiet stream from a dead one (gateway/openapi.json: every 15 s).
const sseHeartbeat = 15 * time.Second

// sseWriter writes Server-Sent Events. Writes are buffered and flushed per event, so a
// burst of small events costs one syscall each, not one per line. Each event and
// heartbeat has a write deadline: a client that reads nothing for the timeout fails
// the write, and its stream ends. It is used by one goroutine.
type sseWriter struct {
	w        *bufio.Writer
	rc       *http.ResponseController
	timeout  time.Duration
	deadline time.Time // the write deadline set last
	bytes    int64
	// progress, when set (readingSlowly), tells whether the client took bytes since
	// it was last asked: a flush that waits longer than half the timeout has its
	// deadline pushed back while the client keeps reading (keepWriting).
	progress func() bool
}

// readingSlowly makes a flush that waits for a client that reads, however slowly,
// wait on (see keepWriting): a stream holds megabytes in the kernel for its client,
// and one that reads them at a few hundred KB/s would otherwise see one flush outlast
// the timeout and be dropped as if it read nothing. progress is connProgress's; nil
// changes nothing.
func (s *sseWriter) readingSlowly(progress func() bool) { s.progress = progress }

// newSSEWriter starts an SSE response on w whose writes each have timeout (> 0) to
// reach the client.
func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s := &sseWriter{w: bufio.NewWriterSize(w, 32<<10), rc: http.NewResponseController(w), timeout: timeout}
	s.arm()
	w.WriteHeader(http.StatusOK)
	_ = s.Flush()
	return s
}

// arm sets the write deadline for the next event: timeout from now. It is moved only
// once a tenth of the timeout has passed, so a burst of events arms one timer.
func (s *sseWriter) arm() {
	now := time.Now()
	if d := s.deadline.Sub(now); d > s.timeout-s.timeout/10 {
		return
	}
	s.deadline = now.Add(s.timeout)
	_ = s.rc.SetWriteDeadline(s.deadline)
}

// Event writes one event; name and id are omitted when empty. data must not contain
// newlines other than as separators of data lines.
func (s *sseWriter) Event(name, id string, data []byte) error {
	defer s.keep()() // a large event's data lines are written out before Flush
	s.arm()
	if name != "" {
		s.w.WriteString("event: ")
		s.w.WriteString(name)
		s.w.WriteByte('\n')
	}
	if id != "" {
		s.w.WriteString("id: ")
		s.w.WriteString(id)
		s.w.WriteByte('\n')
	}
	for _, line := range strings.Split(string(data), "\n") {
		s.w.WriteString("data: ")
		s.w.WriteString(line)
		s.w.WriteByte('\n')
	}
	s.w.WriteByte('\n')
	s.bytes += int64(len(data))
	return s.flush()
}

// Comment writes a comment line (used as a heartbeat).
func (s *sseWriter) Comment(text string) error {
	defer s.keep()()
	s.arm()
	s.w.WriteString(": ")
	s.w.WriteString(text)
	s.w.WriteString("\n\n")
	return s.flush()
}

// keep starts keepWriting for the writes that follow, when readingSlowly set a
// progress; the returned function stops it.
func (s *sseWriter) keep() (stop func()) {
	if s.progress == nil {
		return func() {}
	}
	return keepWriting(s.rc, s.timeout, s.progress)
}

// Flush sends everything buffered to the client.
func (s *sseWriter) Flush() error {
	if s.w.Buffered() > 0 {
		defer s.keep()()
	}
	return s.flush()
}

// flush is Flush for a caller that keeps the writes going itself (keep).
func (s *sseWriter) flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}

// keepWriting pushes rc's write deadline back by timeout whenever, half a timeout
// after the last look (or the start), progress says the client took bytes since, until
// the returned stop is called (when the write is done). A client that takes nothing
// for the timeout still fails the write.
func keepWriting(rc *http.ResponseController, timeout time.Duration, progress func() bool) (stop func()) {
	progress() // what the client took before this write does not count
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	look := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if progress() {
			_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		}
		t.Reset(timeout / 2)
	}
	mu.Lock()
	t = time.AfterFunc(timeout/2, look)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// resumePoint returns where a stream resumes: Last-Event-ID (sent by a reconnecting
// EventSource) wins over the query parameter, which the original URL still carries.
func resumePoint(r *http.Request, param string) (value int64, given bool, err error) {
	raw, name := resumeRaw(r, param)
	if raw == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return 0, false, badRequest("%s must be a non-negative integer, not %q", name, raw)
	}
	return v, true, nil
}

// resumeRaw returns the Last-Event-ID header, or else the query parameter param, and
// the name of the one it returns, for messages.
func resumeRaw(r *http.Request, param string) (raw, name string) {
	if raw := r.Header.Get("Last-Event-ID"); raw != "" {
		return raw, "Last-Event-ID"
	}
	return r.URL.Query().Get(param), param
}

// pumpSSE sends what next yields through write until next fails (the stream ended),
// write fails (the client went away) or ctx ends, with a heartbeat comment whenever the
// stream is quiet for sseHeartbeat. next blocks, so it runs on a goroutine of its own,
// which pumpSSE stops and waits for before it returns; next must return once its ctx
// ends.
func pumpSSE[T any](ctx context.Context, sse *sseWriter, next func(context.Context) (T, error), write func(T) error) {
	ctx, cancel := context.WithCancel(ctx)
	items := make(chan T)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(items)
		for {
			v, err := next(ctx)
			if err != nil {
				return
			}
			select {
			case items <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-done }()
	heartbeat := time.NewTicker(sseHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case v, ok := <-items:
			if !ok || write(v) != nil {
				return
			}
		case <-heartbeat.C:
			if sse.Comment("heartbeat") != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
