package runtime

import (
	"context"
	"io"
	"sort"
)

// TextEvent is one item of a TextSubscription: output cut at unit boundaries, a gap,
// or the exit.
type TextEvent struct {
	// Kind is EventOutput, EventGap or EventExit.
	Kind EventKind
	// Data is the output bytes from From.Offset to To.Offset (EventOutput), owned by
	// the receiver. Its text has To.Units - From.Units UTF-16 units.
	Data []byte
	// Clean says that Data is its own text (EventOutput): valid UTF-8, no byte of it
	// decoded as U+FFFD. AppendText gives the text either way.
	Clean bool
	// From is where the output starts (EventOutput), or where the reader was, its
	// bytes no longer kept (EventGap).
	From TextPos
	// To is where the output ends (EventOutput), or where the text goes on after the
	// gap: the oldest text kept (EventGap).
	To TextPos
	// Exit is the exit status (EventExit).
	Exit ExitStatus
}

// AppendText appends the text of an output event to dst (see TextEncoder): Data itself
// when Clean, else Data decoded. Its UTF-16 length is To.Units - From.Units.
func (e TextEvent) AppendText(dst []byte) []byte {
	if e.Clean {
		return append(dst, e.Data...)
	}
	var enc TextEncoder
	dst, _ = enc.Encode(dst, e.Data)
	dst, _ = enc.Flush(dst) // To is a boundary: held bytes are those of the exit
	return dst
}

// TextSubscription delivers a PTY process's output as text: each output event starts
// and ends at a unit boundary and carries its UTF-16 units, which the process's text
// index already counted as it buffered the output, so a reader that forwards text
// decodes nothing again (only output with bytes that are not valid UTF-8 is decoded,
// by AppendText). Otherwise it is a Subscription (SubscribeOptions apply alike), but
// that a gap event ends at the oldest boundary kept and says its units, and that
// output ends at the newest boundary: the bytes of an incomplete sequence wait for
// the bytes that end it, or for the exit.
//
// One goroutine calls Next; Close is safe from any goroutine and idempotent.
type TextSubscription struct {
	sub *Subscription
	pos TextPos
}

// SubscribeText returns a text subscription from at, a position one of TextStart,
// TextEnd, TextSeek or TextAt returned, with o as in SubscribeWith. It returns
// ErrNoText for a process without a PTY.
func (p *Process) SubscribeText(at TextPos, o SubscribeOptions) (*TextSubscription, error) {
	if p.ring.text == nil {
		return nil, ErrNoText
	}
	return &TextSubscription{sub: p.SubscribeWith(at.Offset, o), pos: at}, nil
}

// Next returns the next event. It blocks until there is one, ctx is done or the
// subscription is closed. After the exit event, and after Close, it returns io.EOF.
func (s *TextSubscription) Next(ctx context.Context) (TextEvent, error) {
	sub := s.sub
	for {
		select {
		case <-sub.closed:
			return TextEvent{}, io.EOF
		default:
		}
		if sub.exitSent {
			return TextEvent{}, io.EOF
		}
		ev, wait, ok := sub.p.ring.readText(sub.hold, s.pos, maxEventBytes)
		if ok {
			s.pos = ev.To
			sub.pos = ev.To.Offset
			sub.exitSent = ev.Kind == EventExit
			return ev, nil
		}
		select {
		case <-wait:
		case <-sub.closed:
			return TextEvent{}, io.EOF
		case <-ctx.Done():
			return TextEvent{}, ctx.Err()
		}
	}
}

// Pos returns the position of the next text the subscription will deliver. Call it
// from the goroutine that calls Next.
func (s *TextSubscription) Pos() TextPos { return s.pos }

// Close ends the subscription.
func (s *TextSubscription) Close() { s.sub.Close() }

// readText is ring.read for a text reader at the boundary pos: output from pos to the
// newest boundary, or to the last mark within max bytes of pos when that is further.
// The exit event's To is pos.
func (r *ring) readText(h *holder, pos TextPos, max int64) (ev TextEvent, wait <-chan struct{}, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pos.Offset < r.start {
		ev = TextEvent{Kind: EventGap, From: pos, To: r.textStartLocked()}
	} else if end := r.textEndLocked(); pos.Offset < end.Offset {
		to := end
		if end.Offset-pos.Offset > max {
			to = r.textBeforeLocked(pos, pos.Offset+max)
		}
		ev = TextEvent{Kind: EventOutput, Data: r.copyLocked(pos.Offset, to.Offset), Clean: r.text.badEnd <= pos.Offset, From: pos, To: to}
	} else if r.exit != nil {
		ev = TextEvent{Kind: EventExit, Exit: *r.exit, From: pos, To: pos}
	} else {
		if r.wait == nil {
			r.wait = make(chan struct{})
		}
		return TextEvent{}, r.wait, false
	}
	if h != nil {
		r.advancedLocked(h, ev.To.Offset)
	}
	return ev, nil, true
}

// textBeforeLocked returns the last mark at or before off that is after pos, a
// retained boundary before the end; with none (marks are at most about markEvery
// apart, so only when off is within that of pos), the first boundary at or after off.
func (r *ring) textBeforeLocked(pos TextPos, off int64) TextPos {
	t := r.text
	ms := t.marks[t.head:]
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Offset > off })
	if i > 0 && ms[i-1].Offset > pos.Offset {
		return ms[i-1]
	}
	at, _ := r.textAtLocked(off)
	return at
}
