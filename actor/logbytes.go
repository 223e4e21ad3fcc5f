package actor

// Byte bounds of the event log and the message queue.
//
// A sandbox's events and queued messages are bounded in count (Config.EventLogLimit,
// MessageQueueLimit) and in bytes (Config.EventLogBytes, MessageQueueBytes). A byte is
// a byte of a stored record, which is what the disk holds and what a cluster moves
// with the sandbox: an item's data and the few dozen bytes of its type or id and time.
//
// The totals are never stored. An activation sums the stored records' sizes when it
// loads (load reads only their lengths, not their contents), so a total is right
// after a restart, after the sandbox moved to another node, and after a version that
// kept no totals, whatever was written before. From then on each post, drop, take and
// acknowledgement adjusts it by the size of the one record it writes or removes, with
// no rescan:
//
//   - The event log keeps the sizes of its stored events, oldest first, in a ring
//     (4 bytes an event, so at most 40 KB for the default 10,000 events, and only
//     while the sandbox is active). An emit pushes the new event's size and drops
//     the oldest events while the log is past either bound, popping their sizes:
//     nothing is read from storage to drop an event.
//   - An acknowledgement already reads the record it deletes, so the queue needs no
//     ring: it subtracts that record's length.

// sizeRing is a FIFO of record sizes: the event log's, for the events evFirst,
// evFirst+1, … in order. Only the actor goroutine touches it.
type sizeRing struct {
	buf  []uint32
	head int // index in buf of the oldest size
	n    int // sizes held
}

// push appends the size of the newest record, growing the ring when it is full.
func (r *sizeRing) push(size int) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = uint32(size)
	r.n++
}

// pop removes and returns the size of the oldest record; 0 when there is none.
func (r *sizeRing) pop() int {
	if r.n == 0 {
		return 0
	}
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return int(v)
}

// len is how many sizes the ring holds.
func (r *sizeRing) len() int { return r.n }

// grow doubles the ring (at least 64 sizes), keeping its order.
func (r *sizeRing) grow() {
	nb := make([]uint32, max(64, 2*len(r.buf)))
	for i := range r.n {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

// keepEvent counts the stored event seq of size bytes into the log's total. Events
// are kept in seq order with no gaps; a seq past the next expected one (which a log
// written as this code writes never has) is counted as the missing events being
// empty, so the ring stays indexed by seq.
func (a *sbActor) keepEvent(seq uint64, size int) {
	if a.evFirst == 0 {
		a.evFirst = seq
	}
	for a.evFirst+uint64(a.evSizes.len()) < seq {
		a.evSizes.push(0)
	}
	a.evSizes.push(size)
	a.evBytes += int64(size)
}

// trimEvents drops the oldest events of the current group's batch while the log is
// past EventLogLimit or EventLogBytes, always keeping the newest one.
func (a *sbActor) trimEvents(w *Batch) {
	limit, bytes := uint64(a.n.cfg.EventLogLimit), a.n.cfg.EventLogBytes
	for a.evFirst < a.evSeq && (a.evSeq-a.evFirst+1 > limit || a.evBytes > bytes) {
		w.Delete(seqKey(pfxEvent, a.evFirst))
		a.evBytes -= int64(a.evSizes.pop())
		a.evFirst++
	}
}

// loadSizes sums the stored events' and queued messages' record sizes, and counts
// the messages, from r.
func (a *sbActor) loadSizes(r Reader) {
	a.evFirst, a.evBytes, a.evSizes = 0, 0, sizeRing{}
	r.Scan(pfxEvent, nil, func(k, v []byte) bool {
		a.keepEvent(keySeq(k), len(v))
		return true
	})
	a.msgCount, a.msgBytes = 0, 0
	r.Scan(pfxMessage, nil, func(_, v []byte) bool {
		a.msgCount++
		a.msgBytes += int64(len(v))
		return true
	})
}

// resetSizes empties the totals, for a sandbox created or deleted.
func (a *sbActor) resetSizes() {
	a.evFirst, a.evBytes, a.evSizes = 0, 0, sizeRing{}
	a.msgCount, a.msgBytes = 0, 0
}
