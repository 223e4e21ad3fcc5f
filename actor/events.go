package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Event is one entry of a sandbox's durable event log. Seq increases by one per event.
type Event struct {
	Seq  uint64
	Type string
	At   time.Time
	Data json.RawMessage
}

// Limits of the event log.
const (
	// MaxEventBytes bounds the data (its JSON encoding) of an event posted with
	// PostEvent; a bigger one is ErrTooLarge. Built-in events are small.
	MaxEventBytes = 64 << 10
	// MaxEventTypeBytes bounds the type of an event posted with PostEvent ("agent."
	// included); a longer one is ErrInvalid.
	MaxEventTypeBytes = 128
	// MaxEventPageBytes caps the data of the events one Events call (or one page of an
	// EventSubscription) reads; it returns fewer events, always at least one, and the
	// caller continues after the last seq it got.
	MaxEventPageBytes = 1 << 20
)

// noData is the data of an event with nothing to say: every event's data is a JSON
// object.
var noData = json.RawMessage("{}")

// emit appends an event in the current turn; it becomes visible to readers and live
// followers once the group commits. The log keeps the newest EventLogLimit events
// within EventLogBytes (logbytes.go). data nil is {}.
func (a *sbActor) emit(typ string, data any) uint64 {
	raw := noData
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		raw = d
	default:
		raw = mustJSON(d)
	}
	a.evSeq++
	seq := a.evSeq
	w := a.write()
	rec := mustJSON(eventRec{Type: typ, At: a.now().UTC(), Data: raw})
	w.Put(seqKey(pfxEvent, seq), rec)
	a.keepEvent(seq, len(rec))
	a.trimEvents(w)
	a.saveCounters()
	id := a.id
	a.afterCommit(func() { a.n.hub.notify(id) })
	return seq
}

// Events returns up to limit events with seq > since, oldest first (limit <= 0: 1000),
// within MaxEventPageBytes of data (at least one event when there is one). It reads
// committed events straight from storage, without a turn.
func (n *Node) Events(ctx context.Context, sb string, since uint64, limit int) ([]Event, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	evs, exists, err := n.readEvents(ctx, sb, since, limit)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound("sandbox", sb)
	}
	return evs, nil
}

func (n *Node) readEvents(ctx context.Context, sb string, since uint64, limit int) (evs []Event, exists bool, err error) {
	if limit <= 0 {
		limit = 1000
	}
	evs = []Event{}
	size := 0
	err = n.store.Read(ctx, sb, func(r Reader) error {
		exists = r.Get(keyMeta) != nil
		var derr error
		r.Scan(pfxEvent, seqKey(pfxEvent, since+1), func(k, v []byte) bool {
			var e eventRec
			if derr = json.Unmarshal(v, &e); derr != nil {
				return false
			}
			data := e.Data
			if data == nil || string(data) == "null" { // as recorded by older versions
				data = noData
			}
			if len(evs) > 0 && size+len(data) > MaxEventPageBytes {
				return false
			}
			size += len(data)
			evs = append(evs, Event{Seq: keySeq(k), Type: e.Type, At: e.At, Data: data})
			return len(evs) < limit
		})
		return derr
	})
	if err != nil {
		return nil, false, fmt.Errorf("actor: failed to read events: %w", err)
	}
	return evs, exists, nil
}

// PostEvent appends an "agent.*" event (any other type, one over MaxEventTypeBytes or
// one with a NUL byte is ErrInvalid) and returns its
// seq once it is durable. data must be a JSON value (nil → {}) of at most
// MaxEventBytes (else ErrTooLarge).
func (n *Node) PostEvent(ctx context.Context, sb, typ string, data json.RawMessage) (uint64, error) {
	if err := checkID("sandbox", sb); err != nil {
		return 0, err
	}
	switch {
	case !strings.HasPrefix(typ, "agent.") || len(typ) == len("agent."):
		return 0, fmt.Errorf("%w: event type %q must be agent.<name>", ErrInvalid, typ)
	case len(typ) > MaxEventTypeBytes:
		return 0, fmt.Errorf("%w: event type is %d bytes, over the limit of %d", ErrInvalid, len(typ), MaxEventTypeBytes)
	case strings.IndexByte(typ, 0) >= 0:
		return 0, fmt.Errorf("%w: event type %q holds a NUL byte", ErrInvalid, typ)
	}
	if len(data) > MaxEventBytes {
		return 0, fmt.Errorf("%w: event data is %d bytes, over the limit of %d", ErrTooLarge, len(data), MaxEventBytes)
	}
	if data != nil && !json.Valid(data) {
		return 0, fmt.Errorf("%w: event data is not JSON", ErrInvalid)
	}
	return call(ctx, n, sb, func(a *sbActor) (uint64, error) {
		if err := a.exists(); err != nil {
			return 0, err
		}
		a.touch()
		return a.emit(typ, data), nil
	})
}
