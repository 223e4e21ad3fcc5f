package actor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func msgIDs(ms []Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s/%d", m.ID, m.Attempts))
	}
	return out
}

func wantMsgs(tb testing.TB, got []Message, want ...string) {
	tb.Helper()
	if ids := msgIDs(got); !slices.Equal(ids, want) {
		tb.Fatalf("messages (id/attempts) = %v, want %v", ids, want)
	}
}

func postN(tb testing.TB, n *testNode, sb string, count int) {
	tb.Helper()
	for i := range count {
		_, err := n.PostMessage(tctx(tb), sb, fmt.Appendf(nil, `{"i":%d}`, i))
		must(tb, err)
	}
}

// TestTakeAckVisibility: taken messages are hidden for their visibility time, then come
// back in post order with attempts counted until acknowledged, by id or in a batch.
func TestTakeAckVisibility(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "tv")
	postN(t, n, "tv", 3)
	vis := TakeOptions{Max: 2, Visibility: 10 * time.Second}
	got, err := n.TakeMessages(ctx, "tv", vis)
	must(t, err)
	wantMsgs(t, got, "msg_1/1", "msg_2/1")
	if string(got[0].Data) != `{"i":0}` || got[0].At.IsZero() {
		t.Fatalf("first message %+v", got[0])
	}
	got, err = n.TakeMessages(ctx, "tv", TakeOptions{Visibility: time.Minute})
	must(t, err)
	wantMsgs(t, got, "msg_3/1")
	got, err = n.TakeMessages(ctx, "tv", TakeOptions{})
	must(t, err)
	wantMsgs(t, got)
	n.clock.Advance(10 * time.Second)
	got, err = n.TakeMessages(ctx, "tv", TakeOptions{Visibility: 10 * time.Second})
	must(t, err)
	wantMsgs(t, got, "msg_1/2", "msg_2/2") // msg_3 is still hidden
	must(t, n.AckMessage(ctx, "tv", "msg_1"))
	wantErr(t, n.AckMessage(ctx, "tv", "msg_1"), ErrNotFound)
	acked, err := n.AckMessages(ctx, "tv", []string{"msg_2", "msg_2", "msg_99", "bogus", "msg_02"})
	must(t, err)
	if acked != 1 {
		t.Fatalf("acked %d, want 1", acked)
	}
	n.clock.Advance(time.Minute)
	got, err = n.TakeMessages(ctx, "tv", TakeOptions{})
	must(t, err)
	wantMsgs(t, got, "msg_3/2")
	_, err = n.TakeMessages(ctx, "tv", TakeOptions{Max: MaxTake + 1})
	wantErr(t, err, ErrInvalid)
	_, err = n.TakeMessages(ctx, "tv", TakeOptions{Visibility: MaxVisibility + time.Millisecond})
	wantErr(t, err, ErrInvalid)
	wantErr(t, n.AckMessage(ctx, "nope", "msg_3"), ErrNotFound)
}

// TestTakeCallerGoneLosesNothing: a take whose caller's ctx ends right after its turn
// ran (the answer may or may not reach it) loses nothing: the message comes back after
// its visibility time with its attempts counted.
func TestTakeCallerGoneLosesNothing(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "cg")
	postN(t, n, "cg", 1)
	unblock := block(t, n, "cg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type res struct {
		msgs []Message
		err  error
	}
	took := make(chan res, 1)
	go func() {
		m, err := n.TakeMessages(ctx, "cg", TakeOptions{})
		took <- res{m, err}
	}()
	eventually(t, 5*time.Second, "take queued", func() bool { return len(n.active("cg").mb) == 1 })
	// Queued behind the take, in the same group: the take's turn has run, its answer
	// is not released yet (the group commits first) when its caller goes away.
	cancelled := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), n.Node, "cg", func(*sbActor) (int, error) { cancel(); return 0, nil })
		cancelled <- err
	}()
	eventually(t, 5*time.Second, "cancel queued", func() bool { return len(n.active("cg").mb) == 2 })
	unblock()
	must(t, <-cancelled)
	r := <-took
	if r.err != nil && !errors.Is(r.err, context.Canceled) {
		t.Fatalf("take: %v", r.err)
	}
	if r.err == nil {
		wantMsgs(t, r.msgs, "msg_1/1")
	}
	got, err := n.TakeMessages(tctx(t), "cg", TakeOptions{})
	must(t, err)
	wantMsgs(t, got) // hidden, not lost
	n.clock.Advance(DefaultVisibility)
	got, err = n.TakeMessages(tctx(t), "cg", TakeOptions{})
	must(t, err)
	wantMsgs(t, got, "msg_1/2")
}

// TestTakeSurvivesRestart: the hide is durable; a node that stops after a take (the
// shutdown case) still has the message, which comes back after its visibility time.
func TestTakeSurvivesRestart(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "tr")
	postN(t, n, "tr", 2)
	got, err := n.TakeMessages(tctx(t), "tr", TakeOptions{Max: 1, Visibility: 5 * time.Second})
	must(t, err)
	wantMsgs(t, got, "msg_1/1")
	closeNode(t, n)
	n2 := reopen(t, n.cfg, n.clock)
	got, err = n2.TakeMessages(tctx(t), "tr", TakeOptions{Visibility: time.Hour})
	must(t, err)
	wantMsgs(t, got, "msg_2/1")
	n2.clock.Advance(5 * time.Second)
	got, err = n2.TakeMessages(tctx(t), "tr", TakeOptions{})
	must(t, err)
	wantMsgs(t, got, "msg_1/2")
}

// TestLongPollWokenByVisibility: a long poll with only hidden messages queued returns
// once one becomes visible again (on the node's clock).
func TestLongPollWokenByVisibility(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "lv")
	postN(t, n, "lv", 1)
	_, err := n.TakeMessages(tctx(t), "lv", TakeOptions{Visibility: time.Second})
	must(t, err)
	took := make(chan []Message, 1)
	go func() {
		m, err := n.TakeMessages(tctx(t), "lv", TakeOptions{Wait: 30 * time.Second})
		if err != nil {
			t.Error(err)
		}
		took <- m
	}()
	// The poll arms its timer on the fake clock some time after it starts: advance
	// until it fires (each step is one visibility time).
	deadline := time.After(20 * time.Second)
	for {
		n.clock.Advance(time.Second)
		select {
		case got := <-took:
			wantMsgs(t, got, "msg_1/2")
			return
		case <-deadline:
			t.Fatal("long poll not woken by the visibility time")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestMessagesSameGroup: turns that share a group see each other's queue writes, which
// are not committed yet: a take sees a message posted just before it, and an ack just
// before a take is not undone by it.
func TestMessagesSameGroup(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	mustCreate(t, n, "sg")
	postN(t, n, "sg", 1)
	unblock := block(t, n, "sg")
	acked, posted := make(chan int, 1), make(chan error, 1)
	go func() {
		k, err := n.AckMessages(tctx(t), "sg", []string{"msg_1"})
		must(t, err)
		acked <- k
	}()
	eventually(t, 5*time.Second, "ack queued", func() bool { return len(n.active("sg").mb) == 1 })
	go func() { _, err := n.PostMessage(tctx(t), "sg", []byte(`"new"`)); posted <- err }()
	eventually(t, 5*time.Second, "post queued", func() bool { return len(n.active("sg").mb) == 2 })
	took := make(chan []Message, 1)
	go func() {
		m, err := n.TakeMessages(tctx(t), "sg", TakeOptions{Wait: 20 * time.Second})
		must(t, err)
		took <- m
	}()
	eventually(t, 5*time.Second, "take queued", func() bool { return len(n.active("sg").mb) == 3 })
	unblock()
	if k := <-acked; k != 1 {
		t.Fatalf("acked %d", k)
	}
	must(t, <-posted)
	wantMsgs(t, <-took, "msg_2/1")
	n.clock.Advance(time.Hour)
	got, err := n.TakeMessages(tctx(t), "sg", TakeOptions{})
	must(t, err)
	wantMsgs(t, got, "msg_2/2") // msg_1 stays acknowledged
}

// msgReadStore counts the message records read through it.
type msgReadStore struct {
	Storage
	msgReads atomic.Int64
}

func (s *msgReadStore) Read(ctx context.Context, sb string, fn func(Reader) error) error {
	return s.Storage.Read(ctx, sb, func(r Reader) error { return fn(&msgReadReader{r, s}) })
}

type msgReadReader struct {
	Reader
	s *msgReadStore
}

func (r *msgReadReader) count(k []byte) {
	if bytes.HasPrefix(k, pfxMessage) {
		r.s.msgReads.Add(1)
	}
}

func (r *msgReadReader) Get(k []byte) []byte { r.count(k); return r.Reader.Get(k) }

func (r *msgReadReader) Scan(p, from []byte, fn func(k, v []byte) bool) {
	r.Reader.Scan(p, from, func(k, v []byte) bool { r.count(k); return fn(k, v) })
}

// TestActivationScansMessagesOnce: activating a sandbox with a long queue reads each
// message record once, to count the queue and sum its bytes (logbytes.go), and keeps
// none of them; a take pages only what it returns.
func TestActivationScansMessagesOnce(t *testing.T) {
	t.Parallel()
	bolt := openTestBolt(t)
	cs := &msgReadStore{Storage: bolt}
	n := newTestNode(t, func(c *Config) { c.Storage = cs })
	mustCreate(t, n, "al")
	postN(t, n, "al", 200)
	passivateAll(t, n)
	cs.msgReads.Store(0)
	if _, err := n.GetSandbox(tctx(t), "al"); err != nil {
		t.Fatal(err)
	}
	if got := cs.msgReads.Load(); got != 200 {
		t.Fatalf("activation read %d message records, want each of the 200 once", got)
	}
	cs.msgReads.Store(0)
	got, err := n.TakeMessages(tctx(t), "al", TakeOptions{Max: 3})
	must(t, err)
	wantMsgs(t, got, "msg_1/1", "msg_2/1", "msg_3/1")
	if r := cs.msgReads.Load(); r == 0 || r > 3 {
		t.Fatalf("take of 3 read %d message records", r)
	}
	// The queue length is counted again at activation: the limit still holds.
	_, err = n.PostMessage(tctx(t), "al", []byte(`1`))
	must(t, err)
}

// TestMessageLimits: over-size data is ErrTooLarge; a full queue (taken messages count
// until acknowledged) is ErrBudgetExceeded, and an ack makes room.
func TestMessageLimits(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, func(c *Config) { c.MessageQueueLimit = 2 })
	ctx := tctx(t)
	mustCreate(t, n, "ml")
	big := []byte(`"` + strings.Repeat("x", MaxMessageBytes) + `"`)
	_, err := n.PostMessage(ctx, "ml", big)
	wantErr(t, err, ErrTooLarge)
	_, err = n.PostEvent(ctx, "ml", "agent.big", []byte(`{"x":`+string(big)+`}`))
	wantErr(t, err, ErrTooLarge)
	_, err = n.PostMessage(ctx, "ml", big[:MaxMessageBytes-1]) // not JSON (no closing quote)
	wantErr(t, err, ErrInvalid)
	ok := append(big[:MaxMessageBytes-1:MaxMessageBytes-1], '"')
	_, err = n.PostMessage(ctx, "ml", ok)
	must(t, err)
	postN(t, n, "ml", 1)
	_, err = n.TakeMessages(ctx, "ml", TakeOptions{})
	must(t, err)
	_, err = n.PostMessage(ctx, "ml", []byte(`3`))
	wantErr(t, err, ErrBudgetExceeded)
	must(t, n.AckMessage(ctx, "ml", "msg_1"))
	_, err = n.PostMessage(ctx, "ml", []byte(`3`))
	must(t, err)
}

// TestTakeByteCap: one take returns messages within its byte cap (at least one).
func TestTakeByteCap(t *testing.T) {
	t.Parallel()
	n := newTestNode(t, nil)
	ctx := tctx(t)
	mustCreate(t, n, "bc")
	data := []byte(`"` + strings.Repeat("y", MaxMessageBytes-2) + `"`)
	count := maxTakeBytes/MaxMessageBytes + 4
	for range count {
		_, err := n.PostMessage(ctx, "bc", data)
		must(t, err)
	}
	got, err := n.TakeMessages(ctx, "bc", TakeOptions{Max: MaxTake})
	must(t, err)
	if len(got) == 0 || len(got)*MaxMessageBytes > maxTakeBytes {
		t.Fatalf("took %d messages of %d bytes, cap %d", len(got), MaxMessageBytes, maxTakeBytes)
	}
	rest, err := n.TakeMessages(ctx, "bc", TakeOptions{Max: MaxTake})
	must(t, err)
	if len(got)+len(rest) != count || rest[0].ID != msgID(uint64(len(got)+1)) {
		t.Fatalf("took %d then %d (first %s) of %d", len(got), len(rest), rest[0].ID, count)
	}
}
