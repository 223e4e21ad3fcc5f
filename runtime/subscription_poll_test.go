package runtime

import (
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubscriptionPollNotify follows a process with Poll and Notify alone, as a
// subscriber without a goroutine of its own does: Notify fires once per registration
// when output (or the exit) arrives, not when Poll has something already, and never
// after Close.
func TestSubscriptionPollNotify(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	p, err := sb.Start(testCtx(t), StartOptions{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(-1)
	defer sub.Close()
	if _, ok, err := sub.Poll(); ok || err != nil {
		t.Fatalf("poll of a quiet process: %v %v", ok, err)
	}
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification for %s", what)
		}
	}
	notified := make(chan struct{}, 1)
	var calls atomic.Int32
	fn := func() { calls.Add(1); notified <- struct{}{} }
	if !sub.Notify(fn) {
		t.Fatal("Notify with nothing to read did not register")
	}
	if _, err := p.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	wait(notified, "output")
	var got []byte
	for {
		ev, ok, err := sub.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if string(got) == "hi\n" {
				break
			}
			if sub.Notify(fn) {
				wait(notified, "the rest of the output")
			}
			continue
		}
		got = append(got, ev.Data...)
	}
	if !sub.Notify(fn) {
		t.Fatal("Notify after reading everything did not register")
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	wait(notified, "the exit")
	ev, ok, err := sub.Poll()
	if !ok || err != nil || ev.Kind != EventExit {
		t.Fatalf("after the exit: %+v %v %v", ev, ok, err)
	}
	if _, _, err := sub.Poll(); err != io.EOF {
		t.Fatalf("poll after the exit event: %v", err)
	}
	if sub.Notify(fn) {
		t.Fatal("Notify registered after the exit")
	}

	// Close cancels a registration: a second subscriber's callback never runs.
	q, err := sb.Start(testCtx(t), StartOptions{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	other := q.Subscribe(-1)
	var late atomic.Bool
	if !other.Notify(func() { late.Store(true) }) {
		t.Fatal("Notify did not register")
	}
	other.Close()
	if _, err := q.Write([]byte("after close\n")); err != nil {
		t.Fatal(err)
	}
	if err := q.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if late.Load() {
		t.Fatal("a closed subscription was notified")
	}
	if n := calls.Load(); n < 2 {
		t.Fatalf("%d notifications, want at least 2", n)
	}
}
