package linearize

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Append appends an entry to an event log (POST /v1/sandboxes/{sb}/events). Type and
// Data identify the entry: Data must be unique among the log's appends (a token the
// client put in the event's data) and read back the same way. Its output is Appended.
type Append struct {
	Type string
	Data string
}

// Appended is the output of Append: the seq the server gave the entry.
type Appended struct {
	Seq uint64
}

// ReadLog reads the entries with seq > Since, oldest first, at most Limit of them
// (GET /v1/sandboxes/{sb}/events?since=&limit=). A read that returned fewer than
// Limit entries claims to be complete: it shows every entry up to the newest. Limit 0
// claims nothing beyond the entries shown, as for the prefix of an event stream that
// was still open. Its output is LogRead.
type ReadLog struct {
	Since uint64
	Limit int
}

// LogRead is the output of ReadLog: the entries read, in the order they came.
type LogRead struct {
	Events []Event
}

// Event is one entry of an event log as a read returned it. Type and Data must be
// derived the way the Append of the entry named them; the server's own entries may
// carry any Data.
type Event struct {
	Seq  uint64
	Type string
	Data string
}

func (Append) model() modelKind       { return kindLog }
func (Append) outputOK(out any) bool  { _, ok := out.(Appended); return ok }
func (Append) read() bool             { return false }
func (ReadLog) model() modelKind      { return kindLog }
func (ReadLog) outputOK(out any) bool { _, ok := out.(LogRead); return ok }
func (ReadLog) read() bool            { return true }
func (e Event) id() string            { return e.Type + "\x00" + e.Data }
func (a Append) id() string           { return a.Type + "\x00" + a.Data }

// String describes the append for porcupine's visualization.
func (a Append) String() string { return fmt.Sprintf("append(%s %s)", a.Type, a.Data) }

// String describes the read for porcupine's visualization.
func (r ReadLog) String() string { return fmt.Sprintf("read(since %d, limit %d)", r.Since, r.Limit) }

// String describes the append's result for porcupine's visualization.
func (a Appended) String() string { return fmt.Sprintf("seq %d", a.Seq) }

// String describes the entry for porcupine's visualization.
func (e Event) String() string { return fmt.Sprintf("%d:%s %s", e.Seq, e.Type, e.Data) }

// String describes the entries read for porcupine's visualization.
func (r LogRead) String() string { return fmt.Sprintf("%v", r.Events) }

// logState is what the history so far has established about a log. It is never
// modified once made: a step returns a new one.
type logState struct {
	floor uint64   // the log's first seq, once a read has shown it (0: not known)
	top   uint64   // the highest seq known to exist; every seq from the lowest known one to top exists
	known []Event  // entries known, by seq
	maybe []string // ids of appends with an unknown outcome that no read has shown yet, sorted
}

func (s *logState) find(seq uint64) (Event, bool) {
	i, ok := slices.BinarySearchFunc(s.known, seq, func(e Event, seq uint64) int { return cmpU64(e.Seq, seq) })
	if !ok {
		return Event{}, false
	}
	return s.known[i], true
}

func (s *logState) hasID(id string) bool {
	return slices.ContainsFunc(s.known, func(e Event) bool { return e.id() == id })
}

func (s *logState) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d", s.floor, s.top)
	for _, e := range s.known {
		fmt.Fprintf(&b, "|%d %q", e.Seq, e.id())
	}
	b.WriteString("|?")
	for _, id := range s.maybe {
		fmt.Fprintf(&b, "|%q", id)
	}
	return b.String()
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// logModel is the append-only list model. appended holds the ids of every append in
// the history: an entry with one of those ids may show up in a read only after its
// append (or, for an unknown outcome, its possible effect) was linearized, while any
// other entry is the server's own and may show up at any new seq.
func logModel(ops []porcupine.Operation) porcupine.Model {
	appended := map[string]bool{}
	for _, op := range ops {
		if a, ok := op.Input.(callIn).in.(Append); ok {
			appended[a.id()] = true
		}
	}
	return porcupine.Model{
		Init: func() any { return &logState{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(*logState)
			_, in := stampOf(input)
			out := output.(retOut)
			switch in := in.(type) {
			case Append:
				return stepAppend(s, in, out)
			case ReadLog:
				return stepRead(s, in, out.out.(LogRead).Events, appended)
			}
			return false, s
		},
		Equal:             func(a, b any) bool { return a.(*logState).key() == b.(*logState).key() },
		DescribeOperation: describe,
		DescribeState:     func(s any) string { return s.(*logState).key() },
	}
}

func stepAppend(s *logState, in Append, out retOut) (bool, any) {
	id := in.id()
	if s.hasID(id) {
		return false, s // an entry shows up twice, or a read showed it before its append
	}
	n := *s
	if out.unknown {
		i, _ := slices.BinarySearch(s.maybe, id)
		n.maybe = slices.Insert(slices.Clone(s.maybe), i, id)
		return true, &n
	}
	seq := out.out.(Appended).Seq
	if seq <= s.top {
		return false, s // seqs only grow: this one was known to be taken already
	}
	n.known = append(slices.Clone(s.known), Event{Seq: seq, Type: in.Type, Data: in.Data})
	n.top = seq
	return true, &n
}

func stepRead(s *logState, in ReadLog, evs []Event, appended map[string]bool) (bool, any) {
	if in.Limit > 0 && len(evs) > in.Limit {
		return false, s
	}
	for i, e := range evs {
		if e.Seq <= in.Since || (i > 0 && e.Seq != evs[i-1].Seq+1) {
			return false, s // out of range, out of order, or a gap in a log without gaps
		}
	}
	complete := in.Limit > 0 && len(evs) < in.Limit
	if len(evs) == 0 {
		if complete && s.top > in.Since {
			return false, s // entries known to exist are missing
		}
		return true, s
	}
	n := *s
	first, last := evs[0].Seq, evs[len(evs)-1].Seq
	switch {
	case s.floor != 0 && first != max(in.Since+1, s.floor):
		return false, s // the log's start moved, or entries after since are missing
	case s.floor == 0 && (first > in.Since+1 || in.Since == 0):
		// The read shows where the log starts: nothing before first exists.
		if len(s.known) > 0 && s.known[0].Seq < first {
			return false, s
		}
		n.floor = first
	}
	known := slices.Clone(s.known)
	maybe := s.maybe
	for _, e := range evs {
		if k, ok := s.find(e.Seq); ok {
			if k.id() != e.id() {
				return false, s // an entry changed
			}
			continue
		}
		id := e.id()
		if appended[id] {
			if s.hasID(id) {
				return false, s // one append, two entries
			}
			i, ok := slices.BinarySearch(maybe, id)
			if !ok {
				return false, s // shown before its append took effect
			}
			maybe = slices.Delete(slices.Clone(maybe), i, i+1)
		}
		known = append(known, e)
	}
	slices.SortFunc(known, func(a, b Event) int { return cmpU64(a.Seq, b.Seq) })
	if complete && last < s.top {
		return false, s // entries known to exist are missing
	}
	n.known, n.maybe, n.top = known, maybe, max(s.top, last)
	return true, &n
}
