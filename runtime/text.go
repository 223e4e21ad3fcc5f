package runtime

import "fmt"

// TextPos is a point of a PTY process's output, as a byte offset and as the number of
// UTF-16 code units of the text (see TextEncoder) before it. Every TextPos the
// process returns is a unit boundary: text encoded from Offset with a fresh
// TextEncoder counts on from Units exactly as the index does.
type TextPos struct {
	// Offset is the absolute byte offset, as in Subscribe and Event.Offset.
	Offset int64
	// Units is the number of UTF-16 code units of the text of all bytes before
	// Offset, counted from the process's first output byte, dropped bytes included.
	Units int64
}

// TextStart returns the oldest position a text reader can start at: the first unit
// boundary at or after the ring's oldest retained byte (at most 3 bytes after it,
// when the ring begins inside a multi-byte sequence; TextEnd, when a ring smaller than
// 4 bytes holds only part of an incomplete one). It returns ErrNoText for a process
// without a PTY.
func (p *Process) TextStart() (TextPos, error) {
	r := p.ring
	if r.text == nil {
		return TextPos{}, ErrNoText
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.textStartLocked(), nil
}

// TextEnd returns the newest unit boundary: the end of the output, less an incomplete
// trailing UTF-8 sequence while the process runs (at its exit each such byte counts
// as one U+FFFD, and TextEnd is the end). It returns ErrNoText for a process without
// a PTY.
func (p *Process) TextEnd() (TextPos, error) {
	r := p.ring
	if r.text == nil {
		return TextPos{}, ErrNoText
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.textEndLocked(), nil
}

// TextSeek returns the position with exactly units UTF-16 units before it. A count
// that falls inside a surrogate pair (between the two units of a rune above U+FFFF)
// gives the boundary before that rune; a count past the end gives TextEnd. A count
// before TextStart's returns TextStart's position with an error wrapping ErrTextGone,
// so that the caller can say how much was skipped. It returns ErrNoText for a process
// without a PTY.
//
// It decodes at most a few KiB of the ring, under the ring's lock.
func (p *Process) TextSeek(units int64) (TextPos, error) {
	r := p.ring
	if r.text == nil {
		return TextPos{}, ErrNoText
	}
	r.mu.Lock()
	pos, gone := r.textSeekLocked(units)
	r.mu.Unlock()
	if gone {
		return pos, fmt.Errorf("failed to seek text: %w: unit %d is before the oldest retained, %d", ErrTextGone, units, pos.Units)
	}
	return pos, nil
}

// TextAt returns the first unit boundary at or after byte offset off: where a text
// reader can go on after a gap event (Event.To), or from any offset. off at or past
// TextEnd's gives TextEnd. An offset before the ring's oldest byte returns TextStart's
// position with an error wrapping ErrTextGone. It returns ErrNoText for a process
// without a PTY.
//
// It decodes at most a few KiB of the ring, under the ring's lock.
func (p *Process) TextAt(off int64) (TextPos, error) {
	r := p.ring
	if r.text == nil {
		return TextPos{}, ErrNoText
	}
	r.mu.Lock()
	pos, gone := r.textAtLocked(off)
	r.mu.Unlock()
	if gone {
		return pos, fmt.Errorf("failed to find text position: %w: offset %d is before the oldest retained, %d", ErrTextGone, off, pos.Offset)
	}
	return pos, nil
}
