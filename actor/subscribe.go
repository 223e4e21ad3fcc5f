package actor

import (
	"context"
	"io"
	"sync"
)

// hub wakes live event followers after commits. It only signals: followers read the
// committed events from storage themselves, so an actor never blocks on, or buffers
// for, a slow follower.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*EventSubscription]struct{}
}

func (h *hub) add(id string, s *EventSubscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[id]
	if m == nil {
		m = map[*EventSubscription]struct{}{}
		h.subs[id] = m
	}
	m[s] = struct{}{}
}

func (h *hub) remove(id string, s *EventSubscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[id], s)
	if len(h.subs[id]) == 0 {
		delete(h.subs, id)
	}
}

func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[id] {
		s.signal()
	}
}

// deleted hands followers of id the final sandbox.deleted event.
func (h *hub) deleted(id string, last Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[id] {
		s.mu.Lock()
		s.final = &last
		s.mu.Unlock()
		s.signal()
	}
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			s.signal()
		}
	}
}

// EventSubscription follows a sandbox's event log: it replays events after the
// starting seq, then follows new ones as they commit. One goroutine calls Next; Close is
// safe from any goroutine and idempotent. A follower that falls behind the oldest event
// still kept (EventLogLimit, EventLogBytes) continues from it.
type EventSubscription struct {
	n    *Node
	id   string
	last uint64
	buf  []Event
	sig  chan struct{}

	mu     sync.Mutex // protects final
	final  *Event     // sandbox.deleted, delivered after everything before it
	closed chan struct{}
	once   sync.Once
}

// SubscribeEvents starts following sb's events with seq > since.
func (n *Node) SubscribeEvents(ctx context.Context, sb string, since uint64) (*EventSubscription, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	s := &EventSubscription{n: n, id: sb, last: since, sig: make(chan struct{}, 1), closed: make(chan struct{})}
	n.hub.add(sb, s) // before the first read, so no commit is missed
	evs, exists, err := n.readEvents(ctx, sb, since, 256)
	if err != nil || !exists {
		n.hub.remove(sb, s)
		if err == nil {
			err = notFound("sandbox", sb)
		}
		return nil, err
	}
	s.buf = evs
	return s, nil
}

func (s *EventSubscription) signal() {
	select {
	case s.sig <- struct{}{}:
	default:
	}
}

// Next returns the next event, waiting for one. It returns io.EOF after the sandbox's
// final sandbox.deleted event, ctx.Err() when ctx ends, and ErrUnavailable when the
// subscription or the node is closed.
func (s *EventSubscription) Next(ctx context.Context) (Event, error) {
	for {
		if len(s.buf) > 0 {
			e := s.buf[0]
			s.buf = s.buf[1:]
			s.last = e.Seq
			return e, nil
		}
		select {
		case <-s.closed:
			return Event{}, ErrUnavailable
		default:
		}
		evs, _, err := s.n.readEvents(ctx, s.id, s.last, 256)
		if err != nil {
			return Event{}, err
		}
		if len(evs) > 0 {
			s.buf = evs
			continue
		}
		s.mu.Lock()
		final := s.final
		s.final = nil
		s.mu.Unlock()
		if final != nil {
			s.last = ^uint64(0)
			return *final, nil
		}
		if s.last == ^uint64(0) {
			return Event{}, io.EOF
		}
		select {
		case <-s.sig:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-s.closed:
			return Event{}, ErrUnavailable
		case <-s.n.closing:
			return Event{}, ErrUnavailable
		}
	}
}

// Close stops the subscription; a blocked Next returns.
func (s *EventSubscription) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.n.hub.remove(s.id, s)
	})
}
