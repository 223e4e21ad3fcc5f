package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// sseHandler handles one event of a followed stream. progress says the event moved the
// stream forward (which resets the retry count); stop ends the stream without error.
type sseHandler func(ev sseEvent) (progress, stop bool, err error)

// sseTarget says what to request on each (re)connect.
type sseTarget func() (path []string, query url.Values, lastEventID string)

// followSSE reads a server-sent event stream, reconnecting after a dropped connection or
// a retryable error until handle stops it, returns an error, ctx ends or
// c.retries reconnects in a row failed to make progress.
func (c *Client) followSSE(ctx context.Context, what string, target sseTarget, handle sseHandler) error {
	failures := 0
	for {
		path, q, lastID := target()
		h := http.Header{"Accept": {"text/event-stream"}}
		if lastID != "" {
			h.Set("Last-Event-ID", lastID)
		}
		resp, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q, header: h})
		var drop error
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !retryable(err) {
				return err
			}
			drop = err
		} else {
			rd := newSSEReader(resp.Body)
			for {
				ev, err := rd.next()
				if err != nil {
					drop = err
					break
				}
				progress, stop, err := handle(ev)
				if progress {
					failures = 0
				}
				if stop || err != nil {
					resp.Body.Close()
					return err
				}
			}
			resp.Body.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(drop, errSSETooLarge) {
				return drop
			}
		}
		if failures >= c.retries {
			return fmt.Errorf("sdk: %s: connection lost after %d retries: %w", what, failures, noEOF(drop))
		}
		failures++
		if err := sleepCtx(ctx, c.retryDelay(failures, drop)); err != nil {
			return err
		}
	}
}

// retryable reports whether a failed request may succeed if sent again later: a
// transport failure, or a 429, 502, 503 or 504 answer.
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryDelay is the wait before reconnect attempt n (1-based) after err.
func (c *Client) retryDelay(n int, err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	d := c.backoff
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	return min(d, 5*time.Second)
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noEOF turns an io.EOF from a dropped connection into io.ErrUnexpectedEOF, so a lost
// stream is never mistaken for one that ended.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w (%v)", io.ErrUnexpectedEOF, err)
	}
	return err
}
