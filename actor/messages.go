package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits of the message queue.
const (
	// MaxMessageBytes bounds one message's data (its JSON encoding); a bigger one is
	// ErrTooLarge.
	MaxMessageBytes = 64 << 10
	// DefaultVisibility is how long a taken message stays hidden when
	// TakeOptions.Visibility is zero.
	DefaultVisibility = 30 * time.Second
	// MaxVisibility bounds TakeOptions.Visibility.
	MaxVisibility = 12 * time.Hour
	// MaxTake bounds TakeOptions.Max.
	MaxTake = 1000
	// maxTakeBytes caps the data of one take's messages; a take always returns at
	// least one message when one is visible.
	maxTakeBytes = 1 << 20
)

// Message is one queued message for a sandbox's worker.
type Message struct {
	ID       string
	At       time.Time // when it was posted
	Data     json.RawMessage
	Attempts int // how many takes have returned it, this one included
}

// TakeOptions tunes Node.TakeMessages.
type TakeOptions struct {
	// Wait is how long to long-poll when no message is visible (0: answer at once).
	Wait time.Duration
	// Max is how many messages to take at most: 0 means 100, at most MaxTake.
	Max int
	// Visibility is how long taken messages stay hidden before they are returned
	// again unless acknowledged: 0 means DefaultVisibility, at most MaxVisibility.
	Visibility time.Duration
	// Stop, once closed, ends the long-poll as Wait passing does: a take that waits
	// for a message answers an empty slice at once. Unlike ctx ending, it never
	// abandons a take turn that is queued or running, whose hide may commit, so what
	// the take answers is always what it did (a server shutting down closes it: its
	// waiting takes answer, its takes under way get their messages). nil: never.
	Stop <-chan struct{}
}

// PostMessage appends data (JSON; nil → null) to the sandbox's durable FIFO queue and
// returns the message id once it is durable. Waiting TakeMessages calls are woken then.
// A full queue (Config.MessageQueueLimit, or MessageQueueBytes) is a *BudgetError
// matching ErrBudgetExceeded; data over MaxMessageBytes, or a message bigger than
// MessageQueueBytes on its own, is ErrTooLarge. Message ids ("msg_N") never repeat for a sandbox id,
// even across a delete and re-create.
func (n *Node) PostMessage(ctx context.Context, sb string, data json.RawMessage) (string, error) {
	if err := checkID("sandbox", sb); err != nil {
		return "", err
	}
	if data == nil {
		data = json.RawMessage("null")
	}
	if len(data) > MaxMessageBytes {
		return "", fmt.Errorf("%w: message data is %d bytes, over the limit of %d", ErrTooLarge, len(data), MaxMessageBytes)
	}
	if !json.Valid(data) {
		return "", fmt.Errorf("%w: message data is not JSON", ErrInvalid)
	}
	return call(ctx, n, sb, func(a *sbActor) (string, error) {
		if err := a.exists(); err != nil {
			return "", err
		}
		if a.msgCount >= a.n.cfg.MessageQueueLimit {
			return "", &BudgetError{Budget: "message_queue", Limit: a.n.cfg.MessageQueueLimit, RetryAfter: time.Second}
		}
		m := messageRec{ID: msgID(a.msgSeq + 1), At: a.now().UTC(), Data: data}
		rec := encodeMsg(msgState{}, mustJSON(m))
		if err := a.roomFor(int64(len(rec))); err != nil {
			return "", err
		}
		a.touch()
		a.msgSeq++
		a.msgCount++
		a.msgBytes += int64(len(rec))
		a.putMsg(a.msgSeq, rec)
		a.saveCounters()
		a.wakeTakers()
		return m.ID, nil
	})
}

// roomFor returns nil when the queue's bytes take a message record of size more:
// else a *BudgetError for "message_queue_bytes" (acknowledging makes room), or
// ErrTooLarge for a record that no queue within the bound could hold.
func (a *sbActor) roomFor(size int64) error {
	limit := a.n.cfg.MessageQueueBytes
	if size > limit {
		return fmt.Errorf("%w: message is %d bytes stored, over the queue's limit of %d (message_queue_bytes)", ErrTooLarge, size, limit)
	}
	if a.msgBytes+size > limit {
		return &BudgetError{Budget: "message_queue_bytes", Limit: int(limit), RetryAfter: time.Second}
	}
	return nil
}

func msgID(seq uint64) string { return "msg_" + strconv.FormatUint(seq, 10) }

// msgSeqOf parses a message id; false if it is not one.
func msgSeqOf(id string) (uint64, bool) {
	s, ok := strings.CutPrefix(id, "msg_")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	return seq, err == nil && seq > 0 && msgID(seq) == id
}

// wakeTakers wakes waiting TakeMessages calls once the current group commits.
func (a *sbActor) wakeTakers() {
	if w := a.msgWake; w != nil {
		a.msgWake = nil
		a.afterCommit(func() { close(w) })
	}
}

// TakeMessages returns up to opts.Max visible queued messages, oldest (first posted)
// first, and hides each for opts.Visibility, counting the attempt. A message comes
// back (to this or a later take) once its visibility time passes unless it was
// acknowledged (AckMessages), so a caller that never receives the answer loses
// nothing: the hide is committed before the answer is released. With none visible it
// waits up to opts.Wait (off the actor) and is woken when one is posted or a hidden one
// becomes visible again; it returns an empty slice when Wait passes or opts.Stop is
// closed. Out-of-range options are ErrInvalid.
//
// A ctx that ends abandons the take, and its outcome is unknown: a turn already
// started may still hide messages, which then come back after their visibility time
// (attempts counted) without this caller seeing them. The ctx error says only that
// the caller stopped waiting, never that nothing was taken; to end a long-poll with
// a definite answer, close opts.Stop.
func (n *Node) TakeMessages(ctx context.Context, sb string, opts TakeOptions) ([]Message, error) {
	if err := checkID("sandbox", sb); err != nil {
		return nil, err
	}
	if opts.Max <= 0 {
		opts.Max = 100
	}
	if opts.Visibility <= 0 {
		opts.Visibility = DefaultVisibility
	}
	if opts.Max > MaxTake || opts.Visibility > MaxVisibility {
		return nil, fmt.Errorf("%w: take of %d messages hidden for %v: at most %d for at most %v",
			ErrInvalid, opts.Max, opts.Visibility, MaxTake, MaxVisibility)
	}
	var deadline <-chan time.Time
	if opts.Wait > 0 {
		t := time.NewTimer(opts.Wait) // a long-poll bound for the caller: real time
		defer t.Stop()
		deadline = t.C
	}
	for {
		o, err := call(ctx, n, sb, func(a *sbActor) (takeResult, error) {
			if err := a.exists(); err != nil {
				return takeResult{}, err
			}
			a.touch()
			return a.take(opts)
		})
		if err != nil {
			return nil, err
		}
		if len(o.msgs) > 0 || o.wake == nil {
			return o.msgs, nil
		}
		if !n.waitTake(ctx, o, deadline, opts.Stop) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return []Message{}, nil
		}
	}
}

// takeResult is a take turn's answer: messages, or what to wait on.
type takeResult struct {
	msgs []Message
	wake chan struct{} // closed when a message is posted; nil: do not wait
	next time.Time     // when the earliest hidden message becomes visible (zero: none)
}

// waitTake waits for a take's wake channel or its next visibility time; false when
// the deadline, stop or ctx ends first. Nothing is under way then: this take's turns
// have all answered.
func (n *Node) waitTake(ctx context.Context, o takeResult, deadline <-chan time.Time, stop <-chan struct{}) bool {
	var visible chan struct{}
	if !o.next.IsZero() {
		visible = make(chan struct{})
		t := n.cfg.Clock.AfterFunc(max(0, o.next.Sub(n.cfg.Clock.Now())), func() { close(visible) })
		defer t.Stop()
	}
	select {
	case <-o.wake:
	case <-visible:
	case <-deadline:
		return false
	case <-stop:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

// take is the take turn: it pages the queue from storage (nothing of it is kept in
// memory), takes visible messages within maxTakeBytes and hides them.
func (a *sbActor) take(opts TakeOptions) (takeResult, error) {
	now := a.now()
	var (
		o      takeResult
		taken  []uint64
		states []msgState
		recs   [][]byte
		size   int
		grown  []int // bytes each taken record grows by when it is written again
		derr   error
	)
	err := a.n.store.Read(context.Background(), a.id, func(r Reader) error {
		a.scanMsgs(r, func(seq uint64, v []byte) bool {
			st, raw, err := decodeMsgState(v)
			if err != nil {
				derr = fmt.Errorf("message %d: %w", seq, err)
				return false
			}
			if st.visibleAt.After(now) {
				if o.next.IsZero() || st.visibleAt.Before(o.next) {
					o.next = st.visibleAt
				}
				return true
			}
			if len(taken) > 0 && size+len(raw) > maxTakeBytes {
				return false
			}
			size += len(raw)
			grown = append(grown, msgHeaderLen+len(raw)-len(v)) // a record of an older version gains its header
			taken = append(taken, seq)
			states = append(states, st)
			recs = append(recs, append([]byte(nil), raw...))
			return len(taken) < opts.Max
		})
		return derr
	})
	if err != nil {
		return takeResult{}, fmt.Errorf("%w: failed to read messages of %q: %w", ErrUnavailable, a.id, err)
	}
	o.msgs = make([]Message, 0, len(taken))
	for i, seq := range taken {
		m, err := decodeMsgRec(recs[i])
		if err != nil {
			return takeResult{}, fmt.Errorf("%w: message %d of %q: %w", ErrUnavailable, seq, a.id, err)
		}
		st := msgState{visibleAt: now.Add(opts.Visibility), attempts: states[i].attempts + 1}
		a.putMsg(seq, encodeMsg(st, recs[i]))
		a.msgBytes += int64(grown[i])
		data := m.Data
		if data == nil {
			data = json.RawMessage("null")
		}
		o.msgs = append(o.msgs, Message{ID: m.ID, At: m.At, Data: data, Attempts: int(st.attempts)})
	}
	if len(o.msgs) == 0 && opts.Wait > 0 {
		if a.msgWake == nil {
			a.msgWake = make(chan struct{})
		}
		o.wake = a.msgWake
	}
	return o, nil
}

// AckMessages acknowledges (removes) the queued messages with the given ids and
// returns how many it removed: an unknown or already removed id counts nothing. A
// message need not have been taken to be acknowledged.
func (n *Node) AckMessages(ctx context.Context, sb string, ids []string) (int, error) {
	if err := checkID("sandbox", sb); err != nil {
		return 0, err
	}
	return call(ctx, n, sb, func(a *sbActor) (int, error) {
		if err := a.exists(); err != nil {
			return 0, err
		}
		a.touch()
		acked, freed := 0, 0
		err := a.n.store.Read(context.Background(), a.id, func(r Reader) error {
			for _, id := range ids {
				seq, ok := msgSeqOf(id)
				if !ok {
					continue
				}
				v := a.getMsg(r, seq)
				if v == nil {
					continue
				}
				freed += len(v)
				a.delMsg(seq)
				acked++
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("%w: failed to read messages of %q: %w", ErrUnavailable, a.id, err)
		}
		if acked > 0 {
			a.msgCount -= acked
			a.msgBytes -= int64(freed)
			a.saveCounters()
		}
		return acked, nil
	})
}

// AckMessage acknowledges (removes) one queued message; an unknown or already removed
// id is a *NotFoundError.
func (n *Node) AckMessage(ctx context.Context, sb, id string) error {
	acked, err := n.AckMessages(ctx, sb, []string{id})
	if err != nil {
		return err
	}
	if acked == 0 {
		return notFound("message", id)
	}
	return nil
}
