package plugins

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitDone fails t unless c ends within a generous bound.
func waitDone(t *testing.T, c *callContext) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("call context did not end")
	}
}

type ctxKey struct{}

func TestCallContext(t *testing.T) {
	t.Parallel()
	background := func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }
	tests := []struct {
		name    string
		parent  func() (context.Context, context.CancelFunc)
		cancel  bool // the test cancels the parent during the call
		timeout time.Duration
		want    error // how the call ends; nil: it does not
	}{
		{name: "answers in time", parent: background, timeout: time.Hour},
		{name: "overruns", parent: background, timeout: time.Millisecond, want: context.DeadlineExceeded},
		{name: "caller cancels", timeout: time.Hour, cancel: true, want: context.Canceled,
			parent: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{name: "caller canceled already", timeout: time.Hour, want: context.Canceled,
			parent: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}},
		{name: "caller's deadline first", timeout: time.Hour, want: context.DeadlineExceeded,
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Millisecond)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent, cancel := tt.parent()
			defer cancel()
			parent = context.WithValue(parent, ctxKey{}, "v")
			w := newWatchdog(tt.timeout)
			defer w.close()
			c := newCallContext(w)
			for range 2 { // reusable while it has not ended
				c.start(parent, tt.timeout)
				if d, ok := c.Deadline(); !ok || d.After(time.Now().Add(tt.timeout)) {
					t.Fatalf("deadline %v, %v; want at most %v from now", d, ok, tt.timeout)
				}
				if c.Value(ctxKey{}) != "v" {
					t.Fatal("caller's value missing")
				}
				if tt.want == nil {
					if !c.stop() || c.Err() != nil {
						t.Fatalf("stopped in time but ended: %v", c.Err())
					}
					continue
				}
				if tt.cancel {
					cancel()
				}
				waitDone(t, c)
				if !errors.Is(c.Err(), tt.want) {
					t.Fatalf("ended with %v, want %v", c.Err(), tt.want)
				}
				if c.stop() {
					t.Fatal("stop reports an ended context usable")
				}
				return
			}
			if c.Value(ctxKey{}) != nil {
				t.Fatal("caller's value kept after the call")
			}
		})
	}
}

// TestCallContextHammer races the deadline against stop: stop may say usable only if
// the context has not ended, and once it says unusable the context must end.
func TestCallContextHammer(t *testing.T) {
	t.Parallel()
	w := newWatchdog(time.Millisecond)
	defer w.close()
	for i := range 2000 {
		c := newCallContext(w)
		c.start(context.Background(), time.Duration(i%4)*time.Microsecond)
		if c.stop() {
			if c.Err() != nil {
				t.Fatalf("round %d: stop said usable, but it ended", i)
			}
			continue
		}
		waitDone(t, c)
	}
}

// TestWatchdogRestartsAfterIdle lets the watchdog stop for want of calls, then checks
// that the next overrunning call starts it again and is ended.
func TestWatchdogRestartsAfterIdle(t *testing.T) {
	t.Parallel()
	w := newWatchdog(time.Millisecond)
	defer w.close()
	c := newCallContext(w)
	c.start(context.Background(), time.Hour)
	if !c.stop() {
		t.Fatal("a call in time ended")
	}
	stopped := make(chan struct{})
	go func() { w.wg.Wait(); close(stopped) }() // the goroutine returns once idle
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not stop when idle")
	}
	if w.running.Load() {
		t.Fatal("the watchdog stopped but says it runs")
	}
	c.start(context.Background(), time.Millisecond)
	waitDone(t, c)
	if !errors.Is(c.Err(), context.DeadlineExceeded) || c.stop() {
		t.Fatalf("ended with %v; want a deadline and an unusable context", c.Err())
	}
}
