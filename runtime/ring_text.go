package runtime

import (
	"sort"
	"unicode/utf8"
)

// markEvery is the spacing of the text index's marks: a mark is taken at the first
// unit boundary at or after each multiple of markEvery, so that finding the position
// of a unit count decodes at most about markEvery bytes of the ring.
const markEvery = 2 << 10

// textIndex maps a PTY ring's byte offsets to UTF-16 unit counts of its text (see
// TextEncoder for the rule). It counts every byte as the ring appends it, so its
// counts are absolute from the process's first byte, including bytes the ring has
// since dropped. Its fields are guarded by the ring's mutex.
type textIndex struct {
	st     textState // the incomplete sequence at the end of the ring, held
	units  int64     // units before the boundary at r.end - st.n
	marks  []TextPos // boundaries, at most about markEvery apart; marks[head:] are retained
	head   int
	closed bool  // the process exited: held bytes were counted as U+FFFD each
	end    int64 // the offset after the last byte counted
	// badEnd is an offset no byte decoded as U+FFFD is at or after: the end of the
	// last piece of addLocked that decided one (or the end, for bytes held at the
	// exit). Text read from a boundary at or after it is its bytes (TextEvent.Clean).
	badEnd int64
}

// newTextRing returns a ring of max bytes that keeps a text index.
func newTextRing(max int) *ring {
	r := newRing(max)
	r.text = &textIndex{}
	return r
}

// addLocked counts p, appended at offset off, marking the boundaries it passes.
func (t *textIndex) addLocked(off int64, p []byte) {
	if t.closed {
		return
	}
	t.end = off + int64(len(p))
	for len(p) > 0 {
		next := (off/markEvery + 1) * markEvery
		k := int(min(int64(len(p)), next-off))
		bad := t.st.bad
		_, u := t.st.feed(nil, p[:k], false)
		t.units += u
		off += int64(k)
		p = p[k:]
		if t.st.bad != bad {
			t.badEnd = off
		}
		if off == next {
			b := off - int64(t.st.n)
			if n := len(t.marks); n == t.head || t.marks[n-1].Offset < b {
				t.marks = append(t.marks, TextPos{Offset: b, Units: t.units})
			}
		}
	}
}

// pruneLocked forgets the marks before start, the ring's oldest byte.
func (t *textIndex) pruneLocked(start int64) {
	for t.head < len(t.marks) && t.marks[t.head].Offset < start {
		t.head++
	}
	if t.head > 32 && t.head > len(t.marks)/2 {
		n := copy(t.marks, t.marks[t.head:])
		t.marks = t.marks[:n]
		t.head = 0
	}
}

// closeLocked counts the held bytes, one U+FFFD each: no more bytes can complete them.
func (t *textIndex) closeLocked() {
	if t.st.n > 0 {
		t.badEnd = t.end
	}
	_, u := t.st.flush(nil, false)
	t.units += u
	t.closed = true
}

// textEndLocked returns the newest boundary.
func (r *ring) textEndLocked() TextPos {
	return TextPos{Offset: r.end - int64(r.text.st.n), Units: r.text.units}
}

// textStartLocked returns the oldest boundary at or after the ring's start. Bytes
// before the start are gone, so whether a continuation byte at the start ends a
// sequence that began before it or is an invalid byte on its own cannot be told; but
// a byte that is not a continuation byte always starts a token, and so does a byte
// after three continuation bytes (no sequence is longer than four). So the start is
// at most 3 bytes after the oldest retained byte, or the first mark if that is
// earlier. Its units are those of the next mark (or the end) less the units of the
// bytes between, decoded from it.
func (r *ring) textStartLocked() TextPos {
	t := r.text
	end := r.textEndLocked()
	if r.start == 0 {
		return TextPos{}
	}
	if r.start >= end.Offset {
		return end
	}
	b := end.Offset
	for x := r.start; x < end.Offset; x++ {
		if !isContinuation(r.byteAtLocked(x)) || x-r.start >= utf8Cont {
			b = x
			break
		}
	}
	ref := end
	if t.head < len(t.marks) {
		m := t.marks[t.head]
		if m.Offset <= b {
			return m
		}
		ref = m
	}
	return TextPos{Offset: b, Units: ref.Units - r.countTextLocked(b, ref.Offset)}
}

// utf8Cont is the most continuation bytes a UTF-8 sequence has.
const utf8Cont = 3

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

// textSegmentLocked returns the retained mark to decode from, the last one that is
// not past the target and is after start (else start), and the bytes from it to the
// next mark (else end). past reports whether a mark is beyond the target; it is
// monotonic over the marks. Every token counts at least one unit, so a boundary's
// units grow with its offset, and "after start" compares offsets for either target.
func (r *ring) textSegmentLocked(start, end TextPos, past func(TextPos) bool) (ref TextPos, buf []byte) {
	t := r.text
	ref, limit := start, end.Offset
	ms := t.marks[t.head:]
	i := sort.Search(len(ms), func(i int) bool { return past(ms[i]) })
	if i > 0 && ms[i-1].Offset > start.Offset {
		ref = ms[i-1]
	}
	if i < len(ms) {
		limit = ms[i].Offset
	}
	return ref, r.copyLocked(ref.Offset, limit)
}

// textSeekLocked returns the boundary with units units, clamped to [start, end] (see
// Process.TextSeek); gone says units was before the start.
func (r *ring) textSeekLocked(units int64) (pos TextPos, gone bool) {
	start := r.textStartLocked()
	if units < start.Units {
		return start, true
	}
	end := r.textEndLocked()
	if units >= end.Units {
		return end, false
	}
	ref, buf := r.textSegmentLocked(start, end, func(m TextPos) bool { return m.Units > units })
	at, u := 0, ref.Units
	for at < len(buf) && u < units {
		if buf[at] < utf8.RuneSelf {
			k := int(min(int64(asciiRun(buf[at:])), units-u))
			at += k
			u += int64(k)
			continue
		}
		size, n, _ := textToken(buf[at:])
		if size == 0 { // can only be the tail at the end, after the exit
			size, n = 1, 1
		}
		if u+int64(n) > units {
			break // inside a surrogate pair: the boundary before its rune
		}
		at += size
		u += int64(n)
	}
	return TextPos{Offset: ref.Offset + int64(at), Units: u}, false
}

// textAtLocked returns the first boundary at or after offset off, clamped to [start,
// end]; gone says off was before the ring's start.
func (r *ring) textAtLocked(off int64) (pos TextPos, gone bool) {
	start := r.textStartLocked()
	if off <= start.Offset {
		return start, off < r.start
	}
	end := r.textEndLocked()
	if off >= end.Offset {
		// Before the ring's start even here when the ring is smaller than an
		// incomplete sequence at the end: the start is then the end, before it.
		return end, off < r.start
	}
	ref, buf := r.textSegmentLocked(start, end, func(m TextPos) bool { return m.Offset > off })
	at, u := 0, ref.Units
	for ref.Offset+int64(at) < off {
		size, n, _ := textToken(buf[at:])
		if size == 0 { // the tail at the end, after the exit
			size, n = 1, 1
		}
		at += size
		u += int64(n)
	}
	return TextPos{Offset: ref.Offset + int64(at), Units: u}, false
}

// countTextLocked returns the units of the retained bytes [from, to), decoded from the
// boundary from; to is a boundary, or the end after the exit.
func (r *ring) countTextLocked(from, to int64) int64 {
	var st textState
	_, u := st.feed(nil, r.copyLocked(from, to), false)
	_, f := st.flush(nil, false)
	return u + f
}

// byteAtLocked returns the retained byte at offset o.
func (r *ring) byteAtLocked(o int64) byte {
	return r.buf[o%int64(len(r.buf))]
}

// copyLocked returns a copy of the retained bytes [from, to).
func (r *ring) copyLocked(from, to int64) []byte {
	data := make([]byte, to-from)
	if len(data) == 0 {
		return data
	}
	at := int(from % int64(len(r.buf)))
	n := copy(data, r.buf[at:])
	copy(data[n:], r.buf)
	return data
}
