package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// seqOutput is what `seq 1 n` prints, with the PTY's \n → \r\n when pty is set.
func seqOutput(n int, pty bool) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		if pty {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestHoldLossless: a holding subscriber that reads slower than the process writes
// gets every byte, in order and without a gap, from a process whose output is many
// times its ring, on pipes and on a PTY (whose tail is read to EIO before the exit).
func TestHoldLossless(t *testing.T) {
	t.Parallel()
	const lines = 200000 // about 1.3 MB, twenty rings
	for _, tc := range []struct {
		name string
		pty  *WinSize
	}{
		{name: "pipes"},
		{name: "pty", pty: &WinSize{Cols: 80, Rows: 24}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{OutputBufferBytes: 64 << 10})
			ctx := testCtx(t)
			// seq waits for the file go, made once the holder is subscribed: before it,
			// nothing holds the output, and a fast seq could overrun the ring.
			cmd := "while [ ! -e go ]; do sleep 0.01; done; exec seq 1 " + strconv.Itoa(lines)
			p, err := s.Start(ctx, StartOptions{Command: cmd, PTY: tc.pty})
			if err != nil {
				t.Fatal(err)
			}
			sub := p.SubscribeWith(0, SubscribeOptions{Hold: true, HoldBound: bound})
			defer sub.Close()
			if err := os.WriteFile(filepath.Join(s.Dir(), "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			got, gaps := readSlowly(t, ctx, sub, time.Millisecond) // a slow reader, not a synchronisation
			if len(gaps) > 0 {
				t.Fatalf("gaps %+v", gaps)
			}
			if want := seqOutput(lines, tc.pty != nil); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// readSlowly reads sub to its end, pausing for pause after each output event, and
// returns the output and the gaps.
func readSlowly(t *testing.T, ctx context.Context, sub *Subscription, pause time.Duration) (got []byte, gaps []Event) {
	t.Helper()
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			return got, gaps
		}
		if err != nil {
			t.Fatalf("Next: %v after %d bytes", err, len(got))
		}
		switch ev.Kind {
		case EventOutput:
			got = append(got, ev.Data...)
			time.Sleep(pause)
		case EventGap:
			gaps = append(gaps, ev)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestHoldStalledReleased: a holding subscriber that reads nothing keeps the process
// waiting for its bound (and no longer), then it is skipped: the process finishes,
// and the subscriber, reading at last, gets a gap, the ring's output and the exit. A
// plain subscriber that reads nothing holds nothing.
func TestHoldStalledReleased(t *testing.T) {
	t.Parallel()
	const holdBound = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		hold    bool
		minTime time.Duration
	}{
		{name: "holder", hold: true, minTime: holdBound},
		{name: "plain", hold: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{OutputBufferBytes: 64 << 10})
			ctx := testCtx(t)
			began := time.Now()
			p, err := s.Start(ctx, StartOptions{Argv: []string{"seq", "1", "200000"}, PTY: &WinSize{Cols: 80, Rows: 24}})
			if err != nil {
				t.Fatal(err)
			}
			sub := p.SubscribeWith(0, SubscribeOptions{Hold: tc.hold, HoldBound: holdBound})
			defer sub.Close()
			if _, err := p.Wait(ctx); err != nil {
				t.Fatalf("a stalled subscriber kept the process from finishing: %v", err)
			}
			if took := time.Since(began); took < tc.minTime {
				t.Fatalf("finished after %v, before the holder's bound %v", took, tc.minTime)
			}
			c := collect(t, ctx, sub)
			if len(c.events) != 2 || c.events[0].Kind != EventGap || c.events[0].From != 0 || c.exit == nil {
				t.Fatalf("events %+v, want a gap from 0 and the exit", c.events)
			}
			if want := seqOutput(200000, true); !bytes.HasSuffix(want, c.pty) || len(c.pty) == 0 {
				t.Fatalf("got %d bytes after the gap, not the output's tail", len(c.pty))
			}
		})
	}
}

// TestHoldKill: a process held by a stalled subscriber is killed and its exit
// published once the holder's bound passes; a subscriber that closes lets it go at once.
func TestHoldKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		close bool
	}{
		{name: "stalled"},
		{name: "closed", close: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{OutputBufferBytes: 64 << 10, KillGrace: 100 * time.Millisecond})
			ctx := testCtx(t)
			p, err := s.Start(ctx, StartOptions{Argv: []string{"yes", "held"}, PTY: &WinSize{Cols: 80, Rows: 24}})
			if err != nil {
				t.Fatal(err)
			}
			holdBound := time.Second
			if tc.close {
				holdBound = time.Hour
			}
			sub := p.SubscribeWith(0, SubscribeOptions{Hold: true, HoldBound: holdBound})
			defer sub.Close()
			for p.ring.pending(0) < 64<<10 { // wait until the ring is full and yes is held
				select {
				case <-ctx.Done():
					t.Fatal("the ring never filled")
				case <-time.After(time.Millisecond):
				}
			}
			if tc.close {
				sub.Close()
			}
			kctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			if err := p.Kill(kctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if st, _ := p.Wait(ctx); st.Code == 0 {
				t.Fatalf("exit %+v, want a kill", st)
			}
		})
	}
}

// TestHoldHammer runs holders that read, stall, resume and close at once against a
// fast writer: every holder that reads to the end sees contiguous offsets.
func TestHoldHammer(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, &Config{OutputBufferBytes: 16 << 10})
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Argv: []string{"seq", "1", "100000"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			sub := p.SubscribeWith(0, SubscribeOptions{Hold: true, HoldBound: time.Duration(i+1) * 20 * time.Millisecond})
			defer sub.Close()
			next := int64(0)
			for k := 0; ; k++ {
				ev, err := sub.Next(ctx)
				if err != nil {
					return
				}
				switch ev.Kind {
				case EventOutput:
					if ev.Offset != next {
						t.Errorf("holder %d: output at %d, want %d", i, ev.Offset, next)
						return
					}
					next += int64(len(ev.Data))
				case EventGap:
					next = ev.To
				}
				if i%2 == 0 && k%50 == 49 {
					time.Sleep(time.Duration(i+1) * 10 * time.Millisecond) // sometimes past the bound
				}
				if i == 7 && k == 20 {
					return // leaves early: Close lets the writer go
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHoldProgress: a holder that takes from the ring far more slowly than its bound
// (a connection handing each piece on to a slow peer) keeps holding while its
// Progress says its reader takes bytes, and gets every byte without a gap; without
// that, the same reader is released and sent a gap.
func TestHoldProgress(t *testing.T) {
	t.Parallel()
	const (
		lines     = 30000 // about 170 KB, ten rings
		holdBound = 100 * time.Millisecond
	)
	for _, tc := range []struct {
		name     string
		progress bool
	}{
		{name: "reading", progress: true},
		{name: "no progress told", progress: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSandbox(t, &Config{OutputBufferBytes: 16 << 10})
			ctx := testCtx(t)
			cmd := "while [ ! -e go ]; do sleep 0.01; done; exec seq 1 " + strconv.Itoa(lines)
			p, err := s.Start(ctx, StartOptions{Command: cmd})
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int64
			sub := p.SubscribeWith(0, SubscribeOptions{Hold: true, HoldBound: holdBound, Progress: func() bool {
				asked.Add(1)
				return tc.progress
			}})
			defer sub.Close()
			if err := os.WriteFile(filepath.Join(s.Dir(), "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			got, gaps := readSlowly(t, ctx, sub, 3*holdBound) // handing each piece on, slowly
			if asked.Load() == 0 {
				t.Fatal("Progress was never asked")
			}
			if !tc.progress {
				if len(gaps) == 0 {
					t.Fatal("a holder that made no progress for three bounds at a time was never released")
				}
				return
			}
			if len(gaps) > 0 {
				t.Fatalf("gaps %+v for a reader that kept reading", gaps)
			}
			if want := seqOutput(lines, false); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}
