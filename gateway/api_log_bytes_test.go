package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/actor"
)

// smallLogBytes gives a server small byte bounds on its event logs and message
// queues, so tests reach them with a few posts.
func smallLogBytes(events, messages int64) func(*Config) {
	return func(c *Config) {
		c.actorConfig = func(ac *actor.Config) { ac.EventLogBytes, ac.MessageQueueBytes = events, messages }
	}
}

// wantBudgetError fails unless r is 429 budget_exceeded with Retry-After and a
// message naming limit and its value.
func wantBudgetError(t *testing.T, r response, limit string, value int) {
	t.Helper()
	var e errorBody
	if r.status == http.StatusTooManyRequests {
		r.json(t, &e)
	}
	if r.status != http.StatusTooManyRequests || e.Error.Code != codeBudgetExceeded || r.header.Get("Retry-After") == "" ||
		!strings.Contains(e.Error.Message, limit) || !strings.Contains(e.Error.Message, strconv.Itoa(value)) {
		t.Fatalf("want 429 budget_exceeded naming %s (%d) with Retry-After: %d %s (Retry-After %q)",
			limit, value, r.status, r.body, r.header.Get("Retry-After"))
	}
}

// TestMessageQueueBytesAPI: a post that would take the queue past its byte bound is
// 429 budget_exceeded naming message_queue_bytes; taken messages count until
// acknowledged and an ack makes room; a message bigger than the bound on its own is
// 413 too_large naming it; and a queue full before a restart is full after it.
func TestMessageQueueBytesAPI(t *testing.T) {
	t.Parallel()
	const bound = 8 << 10
	dir := t.TempDir()
	ts, stop := startServerWith(t, dir, smallLogBytes(0, bound))
	ts.sandbox("qb")
	post := func(ts *testServer, n int) response {
		return ts.do("POST", "/v1/sandboxes/qb/messages", map[string]any{"data": map[string]string{"p": strings.Repeat("m", n)}})
	}
	for i := range 3 { // 2000 bytes of data each, with its id, time and header: 3 fit in 8 KiB
		if r := post(ts, 2000); r.status != http.StatusCreated {
			t.Fatalf("post %d: %d %s", i+1, r.status, r.body)
		}
	}
	wantBudgetError(t, post(ts, 2000), "message_queue_bytes", bound)
	taken := takeMsgs(t, ts, "qb", "?max=1")
	wantBudgetError(t, post(ts, 2000), "message_queue_bytes", bound) // taken is still queued
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/qb/messages/"+taken[0].ID, nil)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/qb/messages", map[string]any{"data": map[string]string{"p": strings.Repeat("m", 2000)}})

	r := post(ts, bound)
	if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != codeTooLarge || !strings.Contains(string(r.body), "message_queue_bytes") {
		t.Fatalf("a message over the bound alone: %d %s", r.status, r.body)
	}
	stop()

	ts, _ = startServerWith(t, dir, smallLogBytes(0, bound))
	wantBudgetError(t, post(ts, 2000), "message_queue_bytes", bound)
	var acked struct{ Acked int }
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/qb/messages/ack", map[string]any{"ids": []string{"msg_2"}}).json(t, &acked)
	if acked.Acked != 1 {
		t.Fatalf("acked %d", acked.Acked)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/qb/messages", map[string]any{"data": map[string]string{"p": strings.Repeat("m", 2000)}})
}

// TestEventLogBytesAPI: big events drop the oldest ones so the log stays within its
// byte bound; seqs stay in order, and a page from a dropped seq gets what is left.
func TestEventLogBytesAPI(t *testing.T) {
	t.Parallel()
	const bound = 32 << 10
	ts := newTestServer(t, &serverOptions{config: smallLogBytes(bound, 0)})
	ts.sandbox("eb")
	var last struct{ Seq uint64 }
	for i := range 20 {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/eb/events",
			map[string]any{"type": "agent.big", "data": map[string]string{"p": strings.Repeat("e", 1000*(1+i%6))}}).json(t, &last)
	}
	type event struct {
		Seq  uint64
		Data json.RawMessage
	}
	var page struct{ Events []event }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/eb/events", nil).json(t, &page)
	evs := page.Events
	size := 0
	for i, e := range evs {
		size += len(e.Data)
		if i > 0 && e.Seq != evs[i-1].Seq+1 {
			t.Fatalf("seq %d after %d", e.Seq, evs[i-1].Seq)
		}
	}
	if len(evs) < 4 || len(evs) >= 21 || evs[len(evs)-1].Seq != last.Seq || size > bound {
		t.Fatalf("kept %d events (%d bytes of data), last %d (posted %d)", len(evs), size, evs[len(evs)-1].Seq, last.Seq)
	}
	var from1 struct{ Events []event }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/eb/events?since=1", nil).json(t, &from1)
	if len(from1.Events) != len(evs) || from1.Events[0].Seq != evs[0].Seq {
		t.Fatalf("since=1: %d events from %d, want %d from %d", len(from1.Events), from1.Events[0].Seq, len(evs), evs[0].Seq)
	}
}

// TestMessageQueueBytesAfterMove: a queue at its byte bound on one node is at it on
// the node the sandbox moves to (which sums the replicated records when it loads the
// sandbox), and an acknowledgement there makes room.
func TestMessageQueueBytesAfterMove(t *testing.T) {
	const bound = 8 << 10
	tr := newTrio(t, func(_ int, c *Config) { smallLogBytes(0, bound)(c) })
	c := tr.node("c")
	sb := tr.ownedBy("qm", "a")
	c.sandbox(sb)
	path := "/v1/sandboxes/" + sb + "/messages"
	msg := map[string]any{"data": map[string]string{"p": strings.Repeat("m", 2000)}}
	for range 3 {
		c.mustSettled(http.StatusCreated, "POST", path, msg)
	}
	r, _ := c.sendSettled("POST", path, msg)
	wantBudgetError(t, r, "message_queue_bytes", bound)

	tr.pin(sb, "b")
	r, _ = c.sendSettled("POST", path, msg)
	wantBudgetError(t, r, "message_queue_bytes", bound)
	var in sandboxJSON
	c.mustSettled(http.StatusOK, "GET", "/v1/sandboxes/"+sb, nil).json(t, &in)
	if in.Node != "b" {
		t.Fatalf("sandbox on %q after the move, want b", in.Node)
	}
	c.mustSettled(http.StatusNoContent, "DELETE", path+"/msg_1", nil)
	c.mustSettled(http.StatusCreated, "POST", path, msg)
	r, _ = c.sendSettled("POST", path, msg)
	wantBudgetError(t, r, "message_queue_bytes", bound)
}
