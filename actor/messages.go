package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Message is one queued message for a sandbox's worker.
type Message struct {
	ID   string
	At   time.Time
	Data json.RawMessage
}

// PostMessage appends data (JSON; nil → null) to the sandbox's durable FIFO queue and
// returns the message id once it is durable. Waiting TakeMessages calls are woken then.
// A full queue (Config.MessageQueueLimit) is ErrBudgetExceeded.
func (n *Node) PostMessage(ctx context.Context, sb string, data json.RawMessage) (string, error) {
	if err := checkID("sandbox", sb); err != nil {
		return "", err
	}
	if data == nil {
		data = json.RawMessage("null")
	}
	if !json.Valid(data) {
		return "", fmt.Errorf("%w: message data is not JSON", ErrInvalid)
	}
	return call(ctx, n, sb, func(a *sbActor) (string, error) {
		if err := a.exists(); err != nil {
			return "", err
		}
		if len(a.msgs) >= a.n.cfg.MessageQueueLimit {
			return "", &BudgetError{Budget: "message_queue", Limit: a.n.cfg.MessageQueueLimit, RetryAfter: time.Second}
		}
		a.touch()
		a.msgSeq++
		m := messageRec{ID: fmt.Sprintf("msg_%d", a.msgSeq), At: a.now().UTC(), Data: data}
		a.msgs = append(a.msgs, m)
		a.msgSeqs = append(a.msgSeqs, a.msgSeq)
		a.write().Put(seqKey(pfxMessage, a.msgSeq), mustJSON(m))
		a.saveCounters()
		if w := a.msgWake; w != nil {
			a.msgWake = nil
			a.afterCommit(func() { close(w) })
		}
		return m.ID, nil
	})
}

// TakeMessages removes and returns up to max queued messages (max <= 0: 100), oldest
// first. With none queued it waits up to wait (off the actor) and is woken the moment
// one is posted; it returns an empty slice when wait passes. Messages are removed
// durably before they are returned.
func (n *Node) TakeMessages(ctx context.Context, sb string, wait time.Duration, max int) ([]Message, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	if max <= 0 {
		max = 100
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait) // a long-poll bound for the caller: real time
		defer t.Stop()
		deadline = t.C
	}
	type out struct {
		msgs []Message
		wake chan struct{}
	}
	for {
		o, err := call(ctx, n, sb, func(a *sbActor) (out, error) {
			if err := a.exists(); err != nil {
				return out{}, err
			}
			a.touch()
			if len(a.msgs) == 0 {
				if wait <= 0 {
					return out{msgs: []Message{}}, nil
				}
				if a.msgWake == nil {
					a.msgWake = make(chan struct{})
				}
				return out{wake: a.msgWake}, nil
			}
			k := min(max, len(a.msgs))
			msgs := make([]Message, k)
			w := a.write()
			for i := range k {
				m := a.msgs[i]
				msgs[i] = Message(m)
				w.Delete(seqKey(pfxMessage, a.msgSeqs[i]))
			}
			a.msgs, a.msgSeqs = a.msgs[k:], a.msgSeqs[k:]
			return out{msgs: msgs}, nil
		})
		if err != nil {
			return nil, err
		}
		if o.wake == nil {
			return o.msgs, nil
		}
		select {
		case <-o.wake:
		case <-deadline:
			return []Message{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
