package linearize

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Slack is how far apart the server's wall clock, which stamps visibility deadlines,
// and the recorder's monotonic clock may drift during a test. The queue model widens
// every visibility window by it.
const Slack = 100 * time.Millisecond

// Post queues a message (POST /v1/sandboxes/{sb}/messages). Data identifies it: it
// must be unique among the queue's posts and read back the same way. Its output is
// Posted.
type Post struct {
	Data string
}

// Posted is the output of Post: the message's id.
type Posted struct {
	ID string
}

// Take takes up to Max visible messages and hides them for Visibility
// (GET /v1/sandboxes/{sb}/messages?max=&visibility_ms=). Its output is Taken.
type Take struct {
	Max        int
	Visibility time.Duration
}

// Taken is the output of Take: the messages returned, in the order they came.
type Taken struct {
	Messages []Msg
}

// Msg is a message as a take returned it.
type Msg struct {
	ID       string
	Data     string
	Attempts int
}

// Ack acknowledges messages (DELETE /v1/sandboxes/{sb}/messages/{id}, or POST
// .../messages/ack with several ids). Its output is Acked: for the DELETE, N is 1 for
// 204 and 0 for 404.
type Ack struct {
	IDs []string
}

// Acked is the output of Ack: how many of the ids were removed.
type Acked struct {
	N int
}

func (Post) model() modelKind      { return kindQueue }
func (Post) outputOK(out any) bool { _, ok := out.(Posted); return ok }
func (Post) read() bool            { return false }
func (Take) model() modelKind      { return kindQueue }
func (Take) outputOK(out any) bool { _, ok := out.(Taken); return ok }
func (Take) read() bool            { return false }
func (Ack) model() modelKind       { return kindQueue }
func (Ack) outputOK(out any) bool  { _, ok := out.(Acked); return ok }
func (Ack) read() bool             { return false }

// qmsg is a message as the queue model knows it.
type qmsg struct {
	id, data string
	// lo is the earliest time at which the message may be visible, hi the time
	// from which it surely is (math.MaxInt64: never surely): a message never taken
	// has both 0; one taken by a call from c to r with visibility V has c+V and r+V.
	lo, hi   int64
	attempts int
	acked    bool // surely removed
	maybeAck bool // an ack with an unknown outcome may have removed it
	loose    bool // its post had an unknown outcome: its place in the order is unknown
}

// queueState is what the history so far has established about a queue. It is never
// modified once made: a step returns a new one.
type queueState struct {
	msgs  []qmsg   // in post order
	maybe []string // data of posts with an unknown outcome that no take has shown yet, sorted
}

func (s *queueState) index(id string) int {
	return slices.IndexFunc(s.msgs, func(m qmsg) bool { return m.id == id })
}

func (s *queueState) key() string {
	var b strings.Builder
	for _, m := range s.msgs {
		fmt.Fprintf(&b, "%q %q %d %d %d %t %t %t|", m.id, m.data, m.lo, m.hi, m.attempts, m.acked, m.maybeAck, m.loose)
	}
	for _, d := range s.maybe {
		fmt.Fprintf(&b, "?%q", d)
	}
	return b.String()
}

// surelyVisible reports whether m was visible throughout a take that started at call.
func (m *qmsg) surelyVisible(call int64) bool {
	return !m.acked && !m.maybeAck && !m.loose && (m.hi == 0 || m.hi <= call-int64(Slack))
}

// queueModel is the at-least-once queue model.
func queueModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return &queueState{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(*queueState)
			call, in := stampOf(input)
			out := output.(retOut)
			switch in := in.(type) {
			case Post:
				return stepPost(s, in, out)
			case Take:
				if out.unknown {
					return true, stepTakeUnknown(s, in, call)
				}
				return stepTake(s, in, call, out.at, out.out.(Taken).Messages)
			case Ack:
				return stepAck(s, in, out)
			}
			return false, s
		},
		Equal:             func(a, b any) bool { return a.(*queueState).key() == b.(*queueState).key() },
		DescribeOperation: describe,
		DescribeState:     func(s any) string { return s.(*queueState).key() },
	}
}

func stepPost(s *queueState, in Post, out retOut) (bool, any) {
	if slices.ContainsFunc(s.msgs, func(m qmsg) bool { return m.data == in.Data }) {
		return false, s // shown by a take before it was posted
	}
	n := *s
	if out.unknown {
		i, _ := slices.BinarySearch(s.maybe, in.Data)
		n.maybe = slices.Insert(slices.Clone(s.maybe), i, in.Data)
		return true, &n
	}
	id := out.out.(Posted).ID
	if s.index(id) >= 0 {
		return false, s // ids never repeat
	}
	n.msgs = append(slices.Clone(s.msgs), qmsg{id: id, data: in.Data})
	return true, &n
}

// stepTakeUnknown applies a take whose outcome is unknown: it may have hidden any
// message that was not removed, from some time after its call on, or nothing.
func stepTakeUnknown(s *queueState, in Take, call int64) *queueState {
	n := *s
	n.msgs = slices.Clone(s.msgs)
	for i := range n.msgs {
		m := &n.msgs[i]
		if m.acked {
			continue
		}
		m.lo = min(m.lo, call+int64(in.Visibility))
		m.hi = math.MaxInt64
	}
	return &n
}

func stepTake(s *queueState, in Take, call, ret int64, got []Msg) (bool, any) {
	if in.Max > 0 && len(got) > in.Max {
		return false, s
	}
	n := *s
	n.msgs = slices.Clone(s.msgs)
	maybe := s.maybe
	taken := make([]bool, len(n.msgs)+len(got))
	lastOrdered := -1 // index of the last returned message whose place is known
	for _, g := range got {
		i := n.index(g.ID)
		if i < 0 {
			j, ok := slices.BinarySearch(maybe, g.Data)
			if !ok || slices.ContainsFunc(n.msgs, func(m qmsg) bool { return m.data == g.Data }) {
				return false, s // a message nobody posted (yet)
			}
			maybe = slices.Delete(slices.Clone(maybe), j, j+1)
			n.msgs = append(n.msgs, qmsg{id: g.ID, data: g.Data, loose: true})
			i = len(n.msgs) - 1
		}
		m := &n.msgs[i]
		switch {
		case taken[i]:
			return false, s // returned twice by one take
		case m.data != g.Data:
			return false, s // a message changed
		case m.acked:
			return false, s // an acknowledged message came back
		case m.lo > ret+int64(Slack):
			return false, s // back before its visibility time passed
		case g.Attempts <= m.attempts:
			return false, s // attempts went back: an older state of the queue
		case !m.loose && i < lastOrdered:
			return false, s // out of post order
		}
		if !m.loose {
			lastOrdered = i
		}
		taken[i] = true
		m.lo, m.hi = call+int64(in.Visibility), ret+int64(in.Visibility)
		m.attempts, m.maybeAck = g.Attempts, false
	}
	exhaustive := in.Max > 0 && len(got) < in.Max
	for i := range s.msgs {
		m := &s.msgs[i]
		if taken[i] || !m.surelyVisible(call) {
			continue
		}
		if exhaustive || i < lastOrdered {
			return false, s // a visible message was skipped: lost, or out of order
		}
	}
	n.maybe = maybe
	return true, &n
}

func stepAck(s *queueState, in Ack, out retOut) (bool, any) {
	n := *s
	n.msgs = slices.Clone(s.msgs)
	sure, unsure := 0, 0
	for _, id := range in.IDs {
		i := n.index(id)
		if i < 0 {
			if len(s.maybe) > 0 {
				unsure++ // maybe a message whose post we could not see
			}
			continue
		}
		m := &n.msgs[i]
		switch {
		case m.acked:
		case m.maybeAck:
			unsure++
		default:
			sure++
		}
		if out.unknown {
			m.maybeAck = !m.acked
		} else {
			m.acked, m.maybeAck = true, false
		}
	}
	if out.unknown {
		return true, &n
	}
	if got := out.out.(Acked).N; got < sure || got > sure+unsure {
		return false, s // a message removed twice, or one that was there not found
	}
	return true, &n
}
