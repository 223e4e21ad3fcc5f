package actor

import (
	"strings"
	"testing"
)

// TestEventsByteCap: a listing of large events stops at the byte cap (at least one
// event), and continuing after the last seq returns the rest in order.
func TestEventsByteCap(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.EventLogLimit = 100 })
	ctx := tctx(t)
	mustCreate(t, n, "ec")
	data := []byte(`{"p":"` + strings.Repeat("z", MaxEventBytes-8) + `"}`)
	const count = 40 // 2.5 MiB of data
	for range count {
		_, err := n.PostEvent(ctx, "ec", "agent.big", data)
		must(t, err)
	}
	var since uint64
	pages, got := 0, 0
	for {
		evs, err := n.Events(ctx, "ec", since, 10000)
		must(t, err)
		if len(evs) == 0 {
			break
		}
		size := 0
		for _, e := range evs {
			if e.Seq != since+1 {
				t.Fatalf("seq %d after %d", e.Seq, since)
			}
			since = e.Seq
			size += len(e.Data)
		}
		if size > MaxEventPageBytes {
			t.Fatalf("page of %d events holds %d bytes of data", len(evs), size)
		}
		pages++
		got += len(evs)
	}
	if got != count+1 || pages < 3 {
		t.Fatalf("%d events in %d pages", got, pages)
	}
	_, err := n.PostEvent(ctx, "ec", "agent.big", append(data[:len(data)-2:len(data)-2], `zzzzzzzzz"}`...))
	wantErr(t, err, ErrTooLarge)
}
