package runtime

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ringWrite struct {
	stream Stream
	data   string
}

// readAll reads r from pos until it would block or exits, merging nothing.
func readAll(r *ring, pos int64) []Event {
	var evs []Event
	for {
		ev, next, _, ok := r.read(nil, pos, maxEventBytes)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
		if ev.Kind == EventExit {
			return evs
		}
		pos = next
	}
}

func TestRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []ringWrite
		from   int64
		exit   bool
		want   []Event
		start  int64
		end    int64
	}{
		{name: "empty", max: 8, want: nil},
		{name: "empty exited", max: 8, exit: true, want: []Event{{Kind: EventExit}}},
		{name: "one stream merged", max: 8, writes: []ringWrite{{StreamStdout, "ab"}, {StreamStdout, "cd"}},
			want: []Event{{Kind: EventOutput, Stream: StreamStdout, Offset: 0, Data: []byte("abcd")}}, end: 4},
		{name: "streams split", max: 16, writes: []ringWrite{{StreamStdout, "ab"}, {StreamStderr, "cd"}, {StreamStdout, "e"}},
			want: []Event{
				{Kind: EventOutput, Stream: StreamStdout, Offset: 0, Data: []byte("ab")},
				{Kind: EventOutput, Stream: StreamStderr, Offset: 2, Data: []byte("cd")},
				{Kind: EventOutput, Stream: StreamStdout, Offset: 4, Data: []byte("e")},
			}, end: 5},
		{name: "read from middle of chunk", max: 16, from: 3, writes: []ringWrite{{StreamStdout, "ab"}, {StreamStderr, "cd"}},
			want: []Event{{Kind: EventOutput, Stream: StreamStderr, Offset: 3, Data: []byte("d")}}, end: 4},
		{name: "wrap drops oldest with gap", max: 4, writes: []ringWrite{{StreamStdout, "abc"}, {StreamStderr, "def"}}, exit: true,
			want: []Event{
				{Kind: EventGap, From: 0, To: 2},
				{Kind: EventOutput, Stream: StreamStdout, Offset: 2, Data: []byte("c")},
				{Kind: EventOutput, Stream: StreamStderr, Offset: 3, Data: []byte("def")},
				{Kind: EventExit},
			}, start: 2, end: 6},
		{name: "write larger than ring", max: 4, writes: []ringWrite{{StreamPTY, "0123456789"}},
			want: []Event{{Kind: EventGap, From: 0, To: 6}, {Kind: EventOutput, Stream: StreamPTY, Offset: 6, Data: []byte("6789")}}, start: 6, end: 10},
		{name: "stream switch inside dropped part", max: 4, writes: []ringWrite{{StreamStdout, "ab"}, {StreamStderr, "cdefgh"}},
			want: []Event{{Kind: EventGap, From: 0, To: 4}, {Kind: EventOutput, Stream: StreamStderr, Offset: 4, Data: []byte("efgh")}}, start: 4, end: 8},
		{name: "empty write ignored", max: 4, writes: []ringWrite{{StreamStdout, ""}, {StreamStderr, "x"}},
			want: []Event{{Kind: EventOutput, Stream: StreamStderr, Offset: 0, Data: []byte("x")}}, end: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRing(tt.max)
			for _, w := range tt.writes {
				r.write(w.stream, []byte(w.data))
			}
			if tt.exit {
				r.close(ExitStatus{})
			}
			got := readAll(r, tt.from)
			if len(got) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Kind != w.Kind || g.Stream != w.Stream || g.Offset != w.Offset || !bytes.Equal(g.Data, w.Data) || g.From != w.From || g.To != w.To {
					t.Errorf("event %d = %+v, want %+v", i, g, w)
				}
			}
			if s, e := r.offsets(); s != tt.start || e != tt.end {
				t.Errorf("offsets [%d,%d), want [%d,%d)", s, e, tt.start, tt.end)
			}
		})
	}
}

// TestRingGrowth: the ring allocates lazily and keeps every byte in place while it grows.
func TestRingGrowth(t *testing.T) {
	t.Parallel()
	r := newRing(1 << 20)
	if len(r.buf) != 0 {
		t.Fatalf("allocated %d before any write", len(r.buf))
	}
	var want []byte
	for i := range 3000 {
		chunk := bytes.Repeat([]byte{byte(i)}, i%700+1)
		want = append(want, chunk...)
		r.write(StreamStdout, chunk)
	}
	want = want[len(want)-min(len(want), 1<<20):]
	var got []byte
	for _, ev := range readAll(r, 0) {
		got = append(got, ev.Data...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d (equal=%v)", len(got), len(want), bytes.Equal(got, want))
	}
	if len(r.buf) > 1<<20 {
		t.Errorf("buffer %d over max", len(r.buf))
	}
}

// TestRingHammer: concurrent writers on two streams and concurrent readers, some slow.
// Every reader sees contiguous offsets, exact gaps, bytes that match the stream that
// wrote them, and the exit last.
func TestRingHammer(t *testing.T) {
	t.Parallel()
	const (
		size    = 4 << 10
		writes  = 2000
		readers = 6
	)
	r := newRing(size)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var totalMu sync.Mutex
	total := 0
	for _, w := range []struct {
		stream Stream
		b      byte
	}{{StreamStdout, 'o'}, {StreamStderr, 'e'}} {
		wg.Go(func() {
			for i := range writes {
				n := i%97 + 1
				r.write(w.stream, bytes.Repeat([]byte{w.b}, n))
				totalMu.Lock()
				total += n
				totalMu.Unlock()
			}
		})
	}
	var rwg sync.WaitGroup
	for i := range readers {
		rwg.Go(func() {
			pos, gaps, bytesRead := int64(0), int64(0), int64(0)
			for {
				ev, next, wait, ok := r.read(nil, pos, maxEventBytes)
				if !ok {
					select {
					case <-wait:
					case <-ctx.Done():
						t.Error("reader stuck")
						return
					}
					continue
				}
				switch ev.Kind {
				case EventGap:
					if ev.From != pos || ev.To <= ev.From {
						t.Errorf("gap [%d,%d) at %d", ev.From, ev.To, pos)
						return
					}
					gaps += ev.To - ev.From
				case EventOutput:
					if ev.Offset != pos || len(ev.Data) == 0 {
						t.Errorf("output at %d, want %d", ev.Offset, pos)
						return
					}
					want := byte('o')
					if ev.Stream == StreamStderr {
						want = 'e'
					}
					if bytes.Count(ev.Data, []byte{want}) != len(ev.Data) {
						t.Errorf("stream %s carries %q", ev.Stream, ev.Data)
						return
					}
					bytesRead += int64(len(ev.Data))
				case EventExit:
					totalMu.Lock()
					tot := int64(total)
					totalMu.Unlock()
					if gaps+bytesRead != tot {
						t.Errorf("reader %d: %d read + %d gap != %d written", i, bytesRead, gaps, tot)
					}
					return
				}
				pos = next
				if i%2 == 1 {
					time.Sleep(time.Microsecond) // slow reader: falls behind the ring
				}
			}
		})
	}
	wg.Wait()
	r.close(ExitStatus{})
	rwg.Wait()
}

func TestSubscriptionCloseUnblocks(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Subscribe(-1)
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Next(ctx)
		errc <- err
	}()
	sub.Close()
	sub.Close()
	if err := <-errc; err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next = %v, want io.EOF", err)
	}
	if p.Attached() != 0 {
		t.Errorf("attached %d", p.Attached())
	}
}
