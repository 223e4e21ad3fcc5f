package runtime

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// textRing is a PTY ring under test with the stream written to it so far.
type textRing struct {
	r      *ring
	stream []byte
}

func (tr *textRing) write(p []byte) {
	tr.stream = append(tr.stream, p...)
	tr.r.write(StreamPTY, p)
}

func (tr *textRing) start() TextPos {
	tr.r.mu.Lock()
	defer tr.r.mu.Unlock()
	return tr.r.textStartLocked()
}

func (tr *textRing) end() TextPos {
	tr.r.mu.Lock()
	defer tr.r.mu.Unlock()
	return tr.r.textEndLocked()
}

func (tr *textRing) seek(units int64) (TextPos, bool) {
	tr.r.mu.Lock()
	defer tr.r.mu.Unlock()
	return tr.r.textSeekLocked(units)
}

func (tr *textRing) at(off int64) (TextPos, bool) {
	tr.r.mu.Lock()
	defer tr.r.mu.Unlock()
	return tr.r.textAtLocked(off)
}

// check compares the index with the reference of everything written: the end, the
// start (a boundary within 3 bytes of the ring's oldest byte), and TextSeek of the
// boundaries (all of them when n is 0, and n at random), of counts inside surrogate pairs, before
// the start and past the end, and TextAt of offsets. From every position it returns, encoding the retained
// bytes to the end must count exactly the units between.
func (tr *textRing) check(t *testing.T, rng *rand.Rand, n int) {
	t.Helper()
	closed := tr.r.exit != nil
	ref := reference(tr.stream, !closed)
	end, start := tr.end(), tr.start()
	if want := (TextPos{Offset: int64(len(tr.stream) - ref.held), Units: ref.units()}); end != want {
		t.Fatalf("end %+v, want %+v", end, want)
	}
	ringStart, ringEnd := tr.r.offsets()
	// (A ring smaller than an incomplete sequence holds only part of it: the start
	// is then the end, before the ring's start.)
	if start != end && (start.Offset < ringStart || start.Offset > ringStart+utf8Cont) {
		t.Fatalf("start %+v, ring start %d", start, ringStart)
	}
	// ends holds the boundaries after 0; boundary i is at ends[i-1], 0 at 0.
	boundary := func(i int) TextPos {
		if i == 0 {
			return TextPos{}
		}
		return TextPos{Offset: ref.ends[i-1], Units: ref.counts[i-1]}
	}
	first := sort.Search(len(ref.ends)+1, func(i int) bool { return boundary(i).Offset >= start.Offset })
	if boundary(first) != start {
		t.Fatalf("start %+v is not the boundary %+v", start, boundary(first))
	}
	seekAt := func(i int, encode bool) {
		b := boundary(i)
		got, gone := tr.seek(b.Units)
		if got != b || gone {
			t.Fatalf("seek %d: %+v (gone %v), want %+v", b.Units, got, gone, b)
		}
		if encode {
			tr.checkEncode(t, got, end, closed, ringEnd)
		}
		if i < len(ref.ends) && boundary(i+1).Units == b.Units+2 { // a surrogate pair
			if got, _ := tr.seek(b.Units + 1); got != b {
				t.Fatalf("seek inside a pair %d: %+v, want %+v", b.Units+1, got, b)
			}
		}
	}
	last := len(ref.ends)
	if n <= 0 {
		for i := first; i <= last; i++ {
			seekAt(i, false)
		}
		n = 20
	}
	seekAt(first, true)
	seekAt(last, true)
	for range n {
		seekAt(first+rng.IntN(last-first+1), true)
	}
	// TextAt of offsets: the first boundary at or after each.
	for range 20 {
		off := ringStart + rng.Int64N(ringEnd-ringStart+1)
		want := end
		if off <= start.Offset {
			want = start
		} else if off < end.Offset {
			want = boundary(sort.Search(len(ref.ends)+1, func(i int) bool { return boundary(i).Offset >= off }))
		}
		if got, gone := tr.at(off); got != want || gone {
			t.Fatalf("at %d: %+v (gone %v), want %+v", off, got, gone, want)
		}
	}
	if ringStart > 0 {
		if got, gone := tr.at(rng.Int64N(ringStart)); got != start || !gone {
			t.Fatalf("at before the ring's start: %+v (gone %v), want %+v, gone", got, gone, start)
		}
	}
	if got, gone := tr.seek(end.Units + 1 + rng.Int64N(100)); got != end || gone {
		t.Fatalf("seek past the end: %+v, want %+v", got, end)
	}
	if start.Units > 0 {
		if got, gone := tr.seek(rng.Int64N(start.Units)); got != start || !gone {
			t.Fatalf("seek before the start: %+v (gone %v), want %+v, gone", got, gone, start)
		}
	}
}

// checkEncode encodes the ring's bytes from pos to the end with a fresh encoder, and
// checks that it counts the units from pos to end.
func (tr *textRing) checkEncode(t *testing.T, pos, end TextPos, closed bool, ringEnd int64) {
	t.Helper()
	var e TextEncoder
	_, u := e.Encode(nil, tr.stream[pos.Offset:ringEnd])
	if closed {
		_, f := e.Flush(nil)
		u += f
	}
	if pos.Units+u != end.Units {
		t.Fatalf("encoding from %+v counts %d units, want %d", pos, u, end.Units-pos.Units)
	}
}

// TestTextIndex writes random output (invalid and split multi-byte sequences among
// valid text) in random chunk sizes to PTY rings of several sizes, most of which wrap
// many times, and checks the index against the reference after every write and at
// the exit.
func TestTextIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		total  int
		chunk  int
		rounds int
	}{
		{name: "tiny ring", max: 7, total: 300, chunk: 5, rounds: 40},
		{name: "small chunks", max: 100, total: 2000, chunk: 9, rounds: 20},
		{name: "no wrap", max: 64 << 10, total: 12000, chunk: 700, rounds: 3},
		{name: "wraps with marks", max: 5000, total: 30000, chunk: 1500, rounds: 3},
		{name: "chunks larger than the ring", max: 3000, total: 30000, chunk: 9000, rounds: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for round := range tt.rounds {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(tt.max)))
				tr := &textRing{r: newTextRing(tt.max)}
				out := randomOutput(rng, tt.total)
				for len(out) > 0 {
					k := min(1+rng.IntN(tt.chunk), len(out))
					tr.write(out[:k])
					out = out[k:]
					tr.check(t, rng, 20)
				}
				tr.check(t, rng, 0)
				tr.r.close(ExitStatus{})
				tr.check(t, rng, 0)
			}
		})
	}
}

// TestTextIndexMarksPruned writes 8 MiB through a 16 KiB ring: the marks kept stay
// bounded by the ring's size, not the output's.
func TestTextIndexMarksPruned(t *testing.T) {
	t.Parallel()
	const ringSize = 16 << 10
	r := newTextRing(ringSize)
	rng := rand.New(rand.NewPCG(2, 3))
	chunk := randomOutput(rng, 4000)
	for written := 0; written < 8<<20; written += len(chunk) {
		r.write(StreamPTY, chunk)
		r.mu.Lock()
		n, live := len(r.text.marks), len(r.text.marks)-r.text.head
		r.mu.Unlock()
		if live > ringSize/markEvery+1 || n > max(2*live, live+33) {
			t.Fatalf("after %d bytes: %d marks kept, %d of them retained", written, n, live)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.text.marks[r.text.head]; m.Offset < r.start || m.Offset > r.start+markEvery+utf8Cont {
		t.Fatalf("first mark %+v, ring start %d", m, r.start)
	}
}

// TestProcessTextNoPTY checks that a process on pipes keeps no text index.
func TestProcessTextNoPTY(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, nil)
	ctx := testCtx(t)
	p, err := s.Start(ctx, StartOptions{Command: "printf 'h\\303\\251'"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() (TextPos, error){
		"start": p.TextStart, "end": p.TextEnd, "seek": func() (TextPos, error) { return p.TextSeek(0) },
	} {
		if _, err := f(); !errors.Is(err, ErrNoText) {
			t.Errorf("%s: %v, want ErrNoText", name, err)
		}
	}
}

// TestTextIndexHammer reads the index from several goroutines while one writes to a
// small ring that wraps all the time: every answer is consistent on its own (a seek
// lands on or just before its count, inside [start, end]), starts and ends never go
// back, and at the end the index matches the reference.
func TestTextIndexHammer(t *testing.T) {
	t.Parallel()
	tr := &textRing{r: newTextRing(3000)}
	rng := rand.New(rand.NewPCG(5, 8))
	out := randomOutput(rng, 1<<20)
	done := make(chan struct{})
	errs := make(chan error, 3)
	for g := range 3 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			var last TextPos
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				start, end := tr.start(), tr.end()
				if start.Units < last.Units || end.Units < start.Units {
					errs <- fmt.Errorf("start %+v after %+v, end %+v", start, last, end)
					return
				}
				last = start
				u := start.Units - 3 + rng.Int64N(end.Units-start.Units+7)
				pos, gone := tr.seek(u)
				switch {
				case gone && pos.Units <= u:
					errs <- fmt.Errorf("seek %d: gone, but the start is %+v", u, pos)
					return
				case !gone && pos.Units > u:
					errs <- fmt.Errorf("seek %d: %+v", u, pos)
					return
				case !gone && pos.Units < u-1 && pos.Units < end.Units:
					errs <- fmt.Errorf("seek %d: %+v, and the end was %+v", u, pos, end)
					return
				}
			}
		}()
	}
	for len(out) > 0 {
		k := min(1+rng.IntN(700), len(out))
		tr.write(out[:k])
		out = out[k:]
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tr.check(t, rng, 0)
}

func FuzzTextIndex(f *testing.F) {
	for _, tt := range textCases {
		f.Add([]byte(tt.in), uint16(5), uint8(2))
		f.Add([]byte(tt.in), uint16(4096), uint8(7))
	}
	f.Add(randomOutput(rand.New(rand.NewPCG(1, 1)), 5000), uint16(3000), uint8(200))
	f.Fuzz(func(t *testing.T, in []byte, size uint16, step uint8) {
		tr := &textRing{r: newTextRing(1 + int(size))}
		rng := rand.New(rand.NewPCG(uint64(len(in)), uint64(step)))
		for p := in; len(p) > 0; {
			k := min(1+int(step), len(p))
			tr.write(p[:k])
			p = p[k:]
		}
		tr.check(t, rng, 0)
		tr.r.close(ExitStatus{})
		tr.check(t, rng, 0)
	})
}
