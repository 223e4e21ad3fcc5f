package actortest

import (
	"fmt"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t.Parallel()
	c := NewClock(time.Time{})
	start := c.Now()
	var got []string
	c.AfterFunc(3*time.Second, func() { got = append(got, "c") })
	c.AfterFunc(time.Second, func() { got = append(got, "a") })
	stopped := c.AfterFunc(2*time.Second, func() { got = append(got, "stopped") })
	c.AfterFunc(time.Second, func() { got = append(got, "a2") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once")
	}
	c.Advance(500 * time.Millisecond)
	if len(got) != 0 {
		t.Fatalf("fired early: %v", got)
	}
	c.Advance(time.Second)
	// Scheduled at 1.5s: it fires before "c" (3s) at the next Advance.
	c.AfterFunc(0, func() { got = append(got, "zero") })
	c.Advance(5 * time.Second)
	if fmt.Sprint(got) != "[a a2 zero c]" || c.Pending() != 0 {
		t.Fatalf("got %v, pending %d", got, c.Pending())
	}
	if d := c.Now().Sub(start); d != 6500*time.Millisecond {
		t.Fatalf("now moved %v", d)
	}
}
