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
	// keeper, when set (readingSlowly), pushes the deadline of a write back while the
	// client keeps reading.
	keeper *writeKeeper
}

// readingSlowly makes a write that waits for a client that reads, however slowly,
// wait on (writeKeeper): a stream holds megabytes in the kernel for its client, and one
// that reads them at a few hundred KB/s would otherwise see one write outlast the
// timeout and be dropped as if it read nothing. progress is connProgress's; nil
// changes nothing.
func (s *sseWriter) readingSlowly(progress func() bool) {
	if progress != nil {
		s.keeper = newWriteKeeper(s.rc, s.timeout, progress)
	}
}

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
	if s.keeper != nil { // a large event's data lines are written out before its flush
		s.keeper.start()
		defer s.keeper.stop()
	}
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
	if s.keeper != nil {
		s.keeper.start()
		defer s.keeper.stop()
	}
	s.arm()
	s.w.WriteString(": ")
	s.w.WriteString(text)
	s.w.WriteString("\n\n")
	return s.flush()
}

// Flush sends everything buffered to the client.
func (s *sseWriter) Flush() error {
	if s.keeper != nil && s.w.Buffered() > 0 {
		s.keeper.start()
		defer s.keeper.stop()
	}
	return s.flush()
}

// flush is Flush for a caller that keeps the writes going itself (keeper).
func (s *sseWriter) flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}

// writeKeeper pushes a stream's write deadline back while a write waits for a client
// that keeps reading, however slowly (readingSlowly). One serves every write of its
// stream with one timer: a write done within half the timeout costs a timer reset and
// stop, no syscall and no allocation.
type writeKeeper struct {
	rc       *http.ResponseController
	timeout  time.Duration
	progress func() bool

	mu      sync.Mutex
	writing bool // between start and stop
	based   bool // progress was asked once during this write
	t       *time.Timer
}

func newWriteKeeper(rc *http.ResponseController, timeout time.Duration, progress func() bool) *writeKeeper {
	k := &writeKeeper{rc: rc, timeout: timeout, progress: progress}
	k.t = time.AfterFunc(time.Hour, k.look)
	k.t.Stop()
	return k
}

// start is called as a write begins, stop once it is done.
func (k *writeKeeper) start() {
	k.mu.Lock()
	k.writing, k.based = true, false
	k.t.Reset(k.timeout / 2)
	k.mu.Unlock()
}

func (k *writeKeeper) stop() {
	k.mu.Lock()
	k.writing = false
	k.t.Stop()
	k.mu.Unlock()
}

// look runs half a timeout into a write, then every quarter of one. The first look
// only asks progress, so that what the client took before does not count; each later
// one pushes the deadline back by the timeout if the client took bytes since the look
// before. The deadline, at least nine tenths of a timeout after the write began
// (sseWriter.arm), is first pushed back at three quarters, so a client that takes
// nothing from half the timeout on still fails the write.
func (k *writeKeeper) look() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.writing {
		return
	}
	if !k.based {
		k.progress()
		k.based = true
	} else if k.progress() {
		_ = k.rc.SetWriteDeadline(time.Now().Add(k.timeout))
	}
	k.t.Reset(k.timeout / 4)
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
