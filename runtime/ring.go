package runtime

import (
	"sort"
	"sync"
	"time"
)

const (
	// ringMinAlloc is the first allocation of a ring: rings grow lazily, so an idle
	// process costs next to nothing.
	ringMinAlloc = 4 << 10
	// ringJumpAt is the size past which a growing ring jumps to its maximum.
	ringJumpAt = 64 << 10
	// maxEventBytes caps the data of one output event.
	maxEventBytes = 64 << 10
)

// streamTag says that output from offset off on came from stream, until the next tag.
type streamTag struct {
	off    int64
	stream Stream
}

// ring is the bounded output buffer of one process, addressed by absolute offset across
// its streams. A reader that falls behind the oldest retained byte is told about the
// gap when it next reads. Holders (see ring_hold.go) are readers the writer waits for:
// append reports how much room is left before a byte a holder has not read would be
// dropped, and the process's output reader stops reading the process (waitRoom) while
// there is none, as a terminal does.
//
// ring is safe for concurrent use. Readers wait on the channel returned by read, which is
// closed by the next write or by close.
type ring struct {
	mu      sync.Mutex
	max     int
	buf     []byte // len(buf) is the current capacity; byte at offset o lives at o % len(buf)
	start   int64  // oldest retained offset
	end     int64  // offset after the newest byte
	tags    []streamTag
	tagHead int // tags[:tagHead] describe dropped bytes only
	exit    *ExitStatus
	wait    chan struct{}  // non-nil while a reader waits
	notify  map[any]func() // one-shot callbacks of readers that wait without a goroutine
	text    *textIndex     // PTY rings only (see ring_text.go); nil otherwise

	holders      map[*holder]struct{}
	blockedSince time.Time     // when the writer found no room, while it has none
	room         chan struct{} // non-nil while a writer waits for room; closed when it changes
	waiters      int           // writers in waitRoom
	waitStart    time.Time     // when waiters last became non-zero
	heldTotal    time.Duration // time with waiters, before waitStart
}

func newRing(max int) *ring {
	return &ring{max: max}
}

// write appends p, tagged with stream, dropping the oldest bytes beyond the ring's size,
// and wakes waiting readers. It returns the room left (see append).
func (r *ring) write(stream Stream, p []byte) int {
	return r.append(stream, p, true)
}

// append is write; with wake false, waiting readers are not woken yet (see wake), so
// a writer with more data at hand can batch it into one wake-up. It returns how many
// bytes may be appended next without dropping one a holder has not read; the writer
// keeps to that, and waits (waitRoom) when it is 0.
func (r *ring) append(stream Stream, p []byte, wake bool) int {
	if len(p) == 0 {
		if wake {
			r.wake()
		}
		return r.freeRoom()
	}
	r.mu.Lock()
	if n := len(r.tags); n == r.tagHead || r.tags[n-1].stream != stream {
		r.tags = append(r.tags, streamTag{off: r.end, stream: stream})
	}
	if r.text != nil {
		r.text.addLocked(r.end, p) // all of p, before a head the ring cannot keep is cut
	}
	if len(p) >= r.max { // everything retained so far is dropped, and p's head too
		r.end += int64(len(p) - r.max)
		r.start = r.end
		p = p[len(p)-r.max:]
	}
	r.growLocked(int(r.end-r.start) + len(p))
	size := int64(len(r.buf))
	at := int(r.end % size)
	n := copy(r.buf[at:], p)
	copy(r.buf, p[n:])
	r.end += int64(len(p))
	if r.end-r.start > size {
		r.start = r.end - size
	}
	r.pruneTagsLocked()
	if r.text != nil {
		r.text.pruneLocked(r.start)
	}
	room, _ := r.roomLocked(1)
	if !wake {
		r.mu.Unlock()
		return room
	}
	r.wakeUnlock()
	return room
}

// freeRoom returns the room a writer has now (see append).
func (r *ring) freeRoom() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	room, _ := r.roomLocked(1)
	return room
}

// wake wakes waiting readers.
func (r *ring) wake() {
	r.mu.Lock()
	r.wakeUnlock()
}

// wakeUnlock wakes the readers waiting on the channel, unlocks the ring, then calls
// the notifications: unlocked, so that one may read the ring at once.
func (r *ring) wakeUnlock() {
	if r.wait != nil {
		close(r.wait)
		r.wait = nil
	}
	fns := r.notify
	r.notify = nil
	r.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// notifyAt registers fn, under key, to be called once by the next change, unless a
// reader at pos has something to read now: then it reports false and registers nothing.
// fn runs on the writer's goroutine once the ring is unlocked; the writer waits for it.
func (r *ring) notifyAt(pos int64, key any, fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pos < r.end || r.exit != nil {
		return false
	}
	if r.notify == nil {
		r.notify = make(map[any]func())
	}
	r.notify[key] = fn
	return true
}

// forget drops the callback registered under key, if any.
func (r *ring) forget(key any) {
	r.mu.Lock()
	delete(r.notify, key)
	r.mu.Unlock()
}

// growLocked makes the buffer hold want bytes, up to r.max, keeping retained bytes at
// their offset modulo the new size.
func (r *ring) growLocked(want int) {
	if want <= len(r.buf) || len(r.buf) == r.max {
		return
	}
	size := max(2*len(r.buf), want, ringMinAlloc)
	if size > ringJumpAt {
		// Past this, output is flowing: go straight to the full size instead of
		// copying the retained bytes at every doubling. Large allocations come as
		// fresh zeroed pages, so this is cheap.
		size = r.max
	}
	size = min(size, r.max)
	nb := make([]byte, size)
	for o := r.start; o < r.end; {
		from := int(o % int64(len(r.buf)))
		to := int(o % int64(size))
		n := min(int(r.end-o), len(r.buf)-from, size-to)
		copy(nb[to:to+n], r.buf[from:from+n])
		o += int64(n)
	}
	r.buf = nb
}

func (r *ring) pruneTagsLocked() {
	for r.tagHead+1 < len(r.tags) && r.tags[r.tagHead+1].off <= r.start {
		r.tagHead++
	}
	if r.tagHead > 32 && r.tagHead > len(r.tags)/2 {
		n := copy(r.tags, r.tags[r.tagHead:])
		r.tags = r.tags[:n]
		r.tagHead = 0
	}
}

// close records the exit status; readers get it after the last output byte.
func (r *ring) close(st ExitStatus) {
	r.mu.Lock()
	if r.exit != nil {
		r.mu.Unlock()
		return
	}
	r.exit = &st
	if r.text != nil {
		r.text.closeLocked()
	}
	r.wakeUnlock()
}

// pending returns how far a reader at pos is behind the newest byte.
func (r *ring) pending(pos int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.end-pos, 0)
}

// offsets returns the retained range [start, end).
func (r *ring) offsets() (start, end int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start, r.end
}

// read returns the next event for a reader at pos, with at most max bytes of output,
// and the position after it. When there is nothing to read yet it returns ok == false
// and a channel closed by the next change. It returns the exit event (ok, Kind
// EventExit) once all output up to the end was read. h, when not nil, is the reader's
// holder: its position and progress are updated.
func (r *ring) read(h *holder, pos, max int64) (ev Event, next int64, wait <-chan struct{}, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, next, wait, ok = r.readLocked(pos, max)
	if ok && h != nil {
		r.advancedLocked(h, next)
	}
	return ev, next, wait, ok
}

func (r *ring) readLocked(pos, max int64) (ev Event, next int64, wait <-chan struct{}, ok bool) {
	if pos < r.start {
		return Event{Kind: EventGap, From: pos, To: r.start}, r.start, nil, true
	}
	if pos < r.end {
		i := r.tagHead + sort.Search(len(r.tags)-r.tagHead, func(i int) bool {
			return r.tags[r.tagHead+i].off > pos
		}) - 1
		stop := min(r.end, pos+max)
		if i+1 < len(r.tags) {
			stop = min(stop, r.tags[i+1].off)
		}
		data := make([]byte, stop-pos)
		size := int64(len(r.buf))
		at := int(pos % size)
		n := copy(data, r.buf[at:])
		copy(data[n:], r.buf)
		return Event{Kind: EventOutput, Stream: r.tags[i].stream, Offset: pos, Data: data}, stop, nil, true
	}
	if r.exit != nil {
		return Event{Kind: EventExit, Exit: *r.exit}, pos, nil, true
	}
	if r.wait == nil {
		r.wait = make(chan struct{})
	}
	return Event{}, pos, r.wait, false
}
