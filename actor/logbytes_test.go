package actor

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSizeRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		push, pops int // per round
		rounds     int
	}{
		{name: "fill then drain", push: 200, pops: 200, rounds: 1},
		{name: "steady wraps", push: 3, pops: 3, rounds: 100},
		{name: "grows while wrapped", push: 5, pops: 3, rounds: 100},
		{name: "pop of empty", push: 0, pops: 2, rounds: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r sizeRing
			var want []int
			next := 1
			for range tc.rounds {
				for range tc.push {
					r.push(next)
					want = append(want, next)
					next++
				}
				for range tc.pops {
					got, exp := r.pop(), 0
					if len(want) > 0 {
						exp, want = want[0], want[1:]
					}
					if got != exp {
						t.Fatalf("pop = %d, want %d", got, exp)
					}
				}
				if r.len() != len(want) {
					t.Fatalf("len = %d, want %d", r.len(), len(want))
				}
			}
		})
	}
}

// storedSizes sums the stored records under pfx of sandbox sb, and counts them.
func storedSizes(tb testing.TB, n *testNode, sb string, pfx []byte) (count int, bytes int64) {
	tb.Helper()
	must(tb, n.store.Read(tctx(tb), sb, func(r Reader) error {
		r.Scan(pfx, nil, func(_, v []byte) bool { count++; bytes += int64(len(v)); return true })
		return nil
	}))
	return count, bytes
}

// totals are an activation's byte totals, read in a turn.
type totals struct {
	evBytes, msgBytes int64
	evCount, msgCount int
}

func actorTotals(tb testing.TB, n *testNode, sb string) totals {
	tb.Helper()
	v, err := call(tctx(tb), n.Node, sb, func(a *sbActor) (totals, error) {
		return totals{evBytes: a.evBytes, msgBytes: a.msgBytes, evCount: a.evSizes.len(), msgCount: a.msgCount}, nil
	})
	must(tb, err)
	return v
}

// checkTotals fails unless the activation's totals are those of the stored records.
func checkTotals(tb testing.TB, n *testNode, sb string) totals {
	tb.Helper()
	got := actorTotals(tb, n, sb)
	evCount, evBytes := storedSizes(tb, n, sb, pfxEvent)
	msgCount, msgBytes := storedSizes(tb, n, sb, pfxMessage)
	want := totals{evBytes: evBytes, msgBytes: msgBytes, evCount: evCount, msgCount: msgCount}
	if got != want {
		tb.Fatalf("totals %+v, stored %+v", got, want)
	}
	return got
}

// TestEventLogBytes: big events drop the oldest ones to stay within EventLogBytes;
// seqs stay in order without gaps, a page from a dropped seq gets what is left, and
// an event bigger than the bound on its own is kept alone.
func TestEventLogBytes(t *testing.T) {
	t.Parallel()
	const bound = 40 << 10
	n := newTestNode(t, func(c *Config) { c.EventLogBytes = bound })
	ctx := tctx(t)
	mustCreate(t, n, "eb")
	var last uint64
	for i := range 30 {
		data := []byte(`{"p":"` + strings.Repeat("b", 1000*(1+i%9)) + `"}`) // 1-9 KB
		seq, err := n.PostEvent(ctx, "eb", "agent.big", data)
		must(t, err)
		last = seq
		if tot := checkTotals(t, n, "eb"); tot.evBytes > bound {
			t.Fatalf("after event %d the log holds %d bytes, bound %d", seq, tot.evBytes, bound)
		}
	}
	evs, err := n.Events(ctx, "eb", 0, 0)
	must(t, err)
	if len(evs) < 4 || len(evs) > 30 || evs[len(evs)-1].Seq != last {
		t.Fatalf("kept %d events, last %d (want %d)", len(evs), evs[len(evs)-1].Seq, last)
	}
	for i, e := range evs[1:] {
		if e.Seq != evs[i].Seq+1 {
			t.Fatalf("seq %d after %d", e.Seq, evs[i].Seq)
		}
	}
	// A client resuming from a dropped seq gets what is left, as with the count bound.
	from1, err := n.Events(ctx, "eb", 1, 0)
	must(t, err)
	if len(from1) != len(evs) || from1[0].Seq != evs[0].Seq {
		t.Fatalf("since=1 gave %d events from %d, want %d from %d", len(from1), from1[0].Seq, len(evs), evs[0].Seq)
	}

	huge := []byte(`{"p":"` + strings.Repeat("h", MaxEventBytes-10) + `"}`) // alone over the bound
	seq, err := n.PostEvent(ctx, "eb", "agent.huge", huge)
	must(t, err)
	evs, err = n.Events(ctx, "eb", 0, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Seq != seq {
		t.Fatalf("after an event over the bound: %d events, first %d (want only %d)", len(evs), evs[0].Seq, seq)
	}
	checkTotals(t, n, "eb")
	seq2, err := n.PostEvent(ctx, "eb", "agent.small", nil)
	must(t, err)
	evs, err = n.Events(ctx, "eb", 0, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Seq != seq2 || seq2 != seq+1 {
		t.Fatalf("after a small event: %d events, first %d (want only %d)", len(evs), evs[0].Seq, seq+1)
	}
	checkTotals(t, n, "eb")
}

// TestMessageQueueBytes: a post that would take the queue past MessageQueueBytes is a
// *BudgetError naming message_queue_bytes; taken messages count until acknowledged,
// and an ack makes room; a message bigger than the bound on its own is ErrTooLarge.
func TestMessageQueueBytes(t *testing.T) {
	t.Parallel()
	const bound = 8 << 10
	n := newTestNode(t, func(c *Config) { c.MessageQueueBytes = bound })
	ctx := tctx(t)
	mustCreate(t, n, "qb")
	data := []byte(`"` + strings.Repeat("q", 2000) + `"`)
	posted := 0
	var err error
	for ; posted < 10; posted++ {
		if _, err = n.PostMessage(ctx, "qb", data); err != nil {
			break
		}
	}
	if posted != 3 { // each record is 2002 bytes of data plus its header, id and time
		t.Fatalf("posted %d messages of 2002 bytes within %d (%v)", posted, bound, err)
	}
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != "message_queue_bytes" || be.Limit != bound || !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %#v, want a BudgetError for message_queue_bytes (limit %d)", err, bound)
	}
	if tot := checkTotals(t, n, "qb"); tot.msgBytes > bound || tot.msgCount != 3 {
		t.Fatalf("totals %+v", tot)
	}
	msgs, err := n.TakeMessages(ctx, "qb", TakeOptions{Max: 1})
	must(t, err)
	_, err = n.PostMessage(ctx, "qb", data)
	wantErr(t, err, ErrBudgetExceeded) // taken, not acknowledged: still queued
	checkTotals(t, n, "qb")
	must(t, n.AckMessage(ctx, "qb", msgs[0].ID))
	checkTotals(t, n, "qb")
	_, err = n.PostMessage(ctx, "qb", data)
	must(t, err)
	_, err = n.PostMessage(ctx, "qb", []byte(`1`))
	must(t, err) // room for a small one
	acked, err := n.AckMessages(ctx, "qb", []string{"msg_2", "msg_2", "msg_3", "msg_99"})
	must(t, err)
	if acked != 2 {
		t.Fatalf("acked %d", acked)
	}
	checkTotals(t, n, "qb")

	big := []byte(`"` + strings.Repeat("x", bound) + `"`)
	_, err = n.PostMessage(ctx, "qb", big)
	wantErr(t, err, ErrTooLarge)
	if !strings.Contains(err.Error(), "message_queue_bytes") {
		t.Fatalf("err = %v, want it to name message_queue_bytes", err)
	}
}

// TestLogBytesRestart: after a restart the totals are summed from the stored records,
// not taken from anything stored, so the bounds hold as before: a full queue stays
// full, an ack makes room, and the event log stays within its bound. A queue length
// in the counters that says otherwise, and a message record of an older version
// (which a take rewrites with its header), do not put them off.
func TestLogBytesRestart(t *testing.T) {
	t.Parallel()
	const evBound, msgBound = 30 << 10, 7 << 10
	n := newTestNode(t, func(c *Config) { c.EventLogBytes, c.MessageQueueBytes = evBound, msgBound })
	ctx := tctx(t)
	mustCreate(t, n, "rs")
	data := []byte(`"` + strings.Repeat("r", 2000) + `"`)
	for range 3 {
		_, err := n.PostMessage(ctx, "rs", data)
		must(t, err)
	}
	for range 10 {
		_, err := n.PostEvent(ctx, "rs", "agent.x", []byte(`{"p":`+string(data)+`}`))
		must(t, err)
	}
	before := checkTotals(t, n, "rs")
	closeNode(t, n)

	// What an older version, or a damaged total, leaves: counters that say the queue
	// is empty, and one more message without a header.
	st, err := OpenBolt(filepath.Join(n.cfg.DataDir, "actors.db"))
	must(t, err)
	var c []byte
	must(t, st.Read(ctx, "rs", func(r Reader) error { c = append(c, r.Get(keyCounters)...); return nil }))
	msgSeq := binary.BigEndian.Uint64(c[8:])
	c = binary.BigEndian.AppendUint64(c[:16:16], 0)
	binary.BigEndian.PutUint64(c[8:], msgSeq+1)
	b := &Batch{Sandbox: "rs"}
	b.Put(keyCounters, c)
	legacy := mustJSON(messageRec{ID: msgID(msgSeq + 1), At: n.clock.Now().UTC(), Data: []byte(`2`)})
	b.Put(seqKey(pfxMessage, msgSeq+1), legacy)
	must(t, st.Write(ctx, b))
	must(t, st.Close())

	n = reopen(t, n.cfg, n.clock)
	after := checkTotals(t, n, "rs")
	if after.evBytes != before.evBytes || after.msgBytes != before.msgBytes+int64(len(legacy)) || after.msgCount != 4 {
		t.Fatalf("after restart %+v, before %+v (+ one legacy record of %d bytes)", after, before, len(legacy))
	}
	_, err = n.PostMessage(ctx, "rs", data)
	wantErr(t, err, ErrBudgetExceeded)
	msgs, err := n.TakeMessages(ctx, "rs", TakeOptions{Max: 10})
	must(t, err)
	if len(msgs) != 4 {
		t.Fatalf("took %d messages", len(msgs))
	}
	checkTotals(t, n, "rs") // the legacy record gained its header
	must(t, n.AckMessage(ctx, "rs", msgs[0].ID))
	_, err = n.PostMessage(ctx, "rs", data)
	must(t, err)
	checkTotals(t, n, "rs")
	for range 10 {
		_, err := n.PostEvent(ctx, "rs", "agent.x", []byte(`{"p":`+string(data)+`}`))
		must(t, err)
		if tot := checkTotals(t, n, "rs"); tot.evBytes > evBound {
			t.Fatalf("event log holds %d bytes, bound %d", tot.evBytes, evBound)
		}
	}

	// Passivation and activation (as a move to another node reads them) sum them again.
	passivateAll(t, n)
	checkTotals(t, n, "rs")
	_, err = n.PostMessage(ctx, "rs", data)
	wantErr(t, err, ErrBudgetExceeded)
	must(t, n.DeleteSandbox(ctx, "rs"))
	mustCreate(t, n, "rs")
	if tot := checkTotals(t, n, "rs"); tot.msgBytes != 0 || tot.msgCount != 0 || tot.evCount != 1 {
		t.Fatalf("totals of a new sandbox %+v", tot)
	}
}

// TestLogBytesConcurrent: posts from many goroutines, committed in groups whose
// events drop events of the same group, keep the log and the queue within their byte
// bounds, the log's seqs without gaps, and the totals those of the stored records.
func TestLogBytesConcurrent(t *testing.T) {
	t.Parallel()
	const evBound, msgBound = 24 << 10, 12 << 10
	n := newTestNode(t, func(c *Config) { c.EventLogBytes, c.MessageQueueBytes = evBound, msgBound })
	ctx := tctx(t)
	mustCreate(t, n, "cc")
	var wg sync.WaitGroup
	var posted, refused atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				data := []byte(`{"p":"` + strings.Repeat("c", 500*(1+(g+i)%5)) + `"}`)
				if _, err := n.PostEvent(ctx, "cc", "agent.c", data); err != nil {
					t.Error(err)
					return
				}
				_, err := n.PostMessage(ctx, "cc", data)
				switch {
				case err == nil:
					posted.Add(1)
				case errors.Is(err, ErrBudgetExceeded):
					refused.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	tot := checkTotals(t, n, "cc")
	if tot.evBytes > evBound || tot.msgBytes > msgBound || int64(tot.msgCount) != posted.Load() || refused.Load() == 0 {
		t.Fatalf("totals %+v after %d posted and %d refused messages", tot, posted.Load(), refused.Load())
	}
	evs, err := n.Events(ctx, "cc", 0, 0)
	must(t, err)
	for i, e := range evs[1:] {
		if e.Seq != evs[i].Seq+1 {
			t.Fatalf("seq %d after %d", e.Seq, evs[i].Seq)
		}
	}
	if last := evs[len(evs)-1].Seq; last != 201 { // sandbox.created and 200 posted
		t.Fatalf("last seq %d, want 201", last)
	}
}
