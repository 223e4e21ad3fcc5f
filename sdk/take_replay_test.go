package sdk

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTakeNotSentTwice: the server reads a take of messages on a kept-alive
// connection and the connection breaks before any answer (as when a node runs the
// take and goes down before its answer leaves). Go's transport sends a GET again by
// itself then, and a second take would hide messages nobody received; the take must
// reach the server once, and the caller get the error. A read broken the same way is
// still sent again.
func TestTakeNotSentTwice(t *testing.T) {
	t.Parallel()
	var takes, reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/sandboxes/sb1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"sb1","state":"running"}`)
			return
		case strings.HasSuffix(r.URL.Path, "/messages"):
			takes.Add(1)
		case strings.HasSuffix(r.URL.Path, "/events"):
			if reads.Add(1) > 1 {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"events":[]}`)
				return
			}
		}
		// Served, then the connection breaks before the answer.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c := New(srv.URL, "tok", &Options{HTTPClient: hc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name string
		call func() error
		sent *atomic.Int64
		want int64 // requests that reached the server
		ok   bool
	}{
		{name: "take", call: func() error {
			_, err := c.TakeMessages(ctx, "sb1", &TakeMessagesOptions{Max: 5, VisibilityMS: 60000})
			return err
		}, sent: &takes, want: 1, ok: false},
		{name: "read", call: func() error {
			_, err := c.ListEvents(ctx, "sb1", nil)
			return err
		}, sent: &reads, want: 2, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A kept-alive connection first, so the request goes out on a reused one.
			if _, err := c.GetSandbox(ctx, "sb1"); err != nil {
				t.Fatal(err)
			}
			err := tc.call()
			if got := tc.sent.Load(); got != tc.want {
				t.Errorf("the %s reached the server %d times, want %d", tc.name, got, tc.want)
			}
			if (err == nil) != tc.ok {
				t.Errorf("the %s answered err %v, want ok %t", tc.name, err, tc.ok)
			}
		})
	}
}
