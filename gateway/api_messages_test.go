package gateway

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func takeMsgs(t *testing.T, ts *testServer, sb, query string) []messageJSON {
	t.Helper()
	var out struct{ Messages []messageJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb+"/messages"+query, nil).json(t, &out)
	return out.Messages
}

func msgSummary(ms []messageJSON) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s/%d ", m.ID, m.Attempts)
	}
	return strings.TrimSpace(b.String())
}

// TestMessagesAtLeastOnce: a taken message whose client never handles the answer (it
// crashed after the take, or disconnected) comes back with attempts 2 once its
// visibility passes, waking a long poll; acknowledged ones never come back.
func TestMessagesAtLeastOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("al1")
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/al1/messages", map[string]any{"data": map[string]int{"i": 1}})
	first := takeMsgs(t, ts, "al1", "?visibility_ms=100") // the answer is "lost"
	if msgSummary(first) != "msg_1/1" || string(first[0].Data) != `{"i":1}` || first[0].PostedAt.IsZero() {
		t.Fatalf("first take %+v", first)
	}
	back := takeMsgs(t, ts, "al1", "?wait_ms=20000")
	if msgSummary(back) != "msg_1/2" || string(back[0].Data) != `{"i":1}` {
		t.Fatalf("long poll after the visibility time: %s", msgSummary(back))
	}
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/al1/messages/msg_1", nil)
	r := ts.do("DELETE", "/v1/sandboxes/al1/messages/msg_1", nil)
	if r.status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
		t.Fatalf("second ack: %d %s", r.status, r.body)
	}
	if r := ts.do("DELETE", "/v1/sandboxes/al1/messages/msg_99", nil); r.status != http.StatusNotFound {
		t.Fatalf("ack of an unknown id: %d %s", r.status, r.body)
	}
	if got := takeMsgs(t, ts, "al1", ""); len(got) != 0 {
		t.Fatalf("an acknowledged message came back: %s", msgSummary(got))
	}

	// A client disconnects as soon as it has sent its take: whether or not the take
	// ran before the server saw it go, the message is delivered.
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/al1/messages", map[string]any{"data": map[string]int{"i": 2}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/sandboxes/al1/messages?visibility_ms=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	conn.Close()
	got := takeMsgs(t, ts, "al1", "?wait_ms=20000")
	if len(got) != 1 || got[0].ID != "msg_2" {
		t.Fatalf("after a disconnected take: %s", msgSummary(got))
	}
}

// TestMessagesAckBatchInOrder: unacknowledged messages come back in post order after
// their visibility time; a batch ack answers how many it removed and is bounded.
func TestMessagesAckBatchInOrder(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ab1")
	for i := range 4 {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ab1/messages", map[string]any{"data": map[string]int{"i": i}})
	}
	if got := msgSummary(takeMsgs(t, ts, "ab1", "?max=4&visibility_ms=100")); got != "msg_1/1 msg_2/1 msg_3/1 msg_4/1" {
		t.Fatalf("take %s", got)
	}
	var acked struct{ Acked int }
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/ab1/messages/ack", map[string]any{"ids": []string{"msg_3", "msg_3", "msg_9", "nope"}}).json(t, &acked)
	if acked.Acked != 1 {
		t.Fatalf("acked %d, want 1", acked.Acked)
	}
	// All three were hidden by one take, so they become visible together.
	if got := msgSummary(takeMsgs(t, ts, "ab1", "?max=10&wait_ms=20000")); got != "msg_1/2 msg_2/2 msg_4/2" {
		t.Fatalf("came back %s", got)
	}
	ids := make([]string, maxAckIDs+1)
	for i := range ids {
		ids[i] = "msg_" + strconv.Itoa(i+1)
	}
	for _, body := range []any{map[string]any{"ids": ids}, map[string]any{}, `{"ids":"msg_1"}`,
		map[string]any{"ids": []string{"msg_1", "a\x00b"}}, map[string]any{"ids": []string{"BAD.ID"}}, map[string]any{"ids": []string{""}}} {
		if r := ts.do("POST", "/v1/sandboxes/ab1/messages/ack", body); r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument {
			t.Fatalf("ack %v: %d %s", body, r.status, r.body)
		}
	}
	ts.must(http.StatusOK, "POST", "/v1/sandboxes/ab1/messages/ack", map[string]any{"ids": ids[:maxAckIDs]}).json(t, &acked)
	if acked.Acked != 3 {
		t.Fatalf("acked %d, want 3", acked.Acked)
	}
}

// TestMessageAndEventLimits: out-of-range parameters are 400 naming the parameter;
// event and message data over their limit are 413 too_large naming it.
func TestMessageAndEventLimits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("lim")
	tests := []struct{ name, path, param string }{
		{"max 0", "/messages?max=0", "max"},
		{"max over", "/messages?max=1001", "max"},
		{"max not a number", "/messages?max=x", "max"},
		{"visibility 0", "/messages?visibility_ms=0", "visibility_ms"},
		{"visibility over", "/messages?visibility_ms=43200001", "visibility_ms"},
		{"limit 0", "/events?limit=0", "limit"},
		{"limit over", "/events?limit=10001", "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("GET", "/v1/sandboxes/lim"+tt.path, nil)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(r.body), tt.param) {
				t.Fatalf("%s: %d %s", tt.path, r.status, r.body)
			}
		})
	}
	big := map[string]string{"p": strings.Repeat("x", 70000)}
	for _, post := range []struct {
		path string
		body map[string]any
	}{
		{"/messages", map[string]any{"data": big}},
		{"/events", map[string]any{"type": "agent.big", "data": big}},
	} {
		r := ts.do("POST", "/v1/sandboxes/lim"+post.path, post.body)
		if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != codeTooLarge || !strings.Contains(string(r.body), "65536") {
			t.Fatalf("POST %s of 70000 bytes: %d %s", post.path, r.status, r.body)
		}
	}
}

// TestEventsPagedWithinByteCap: GET /events?limit=10000 over large events answers a
// page within the byte cap; continuing with since gets the rest, in order.
func TestEventsPagedWithinByteCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("cap")
	data := map[string]string{"p": strings.Repeat("e", 60000)}
	const count = 40
	for range count {
		ts.must(http.StatusCreated, "POST", "/v1/sandboxes/cap/events", map[string]any{"type": "agent.big", "data": data})
	}
	var since uint64
	pages, total := 0, 0
	for {
		var list struct{ Events []eventJSON }
		ts.must(http.StatusOK, "GET", "/v1/sandboxes/cap/events?limit=10000&since="+strconv.FormatUint(since, 10), nil).json(t, &list)
		if len(list.Events) == 0 {
			break
		}
		size := 0
		for _, e := range list.Events {
			if e.Seq != since+1 {
				t.Fatalf("seq %d after %d", e.Seq, since)
			}
			since = e.Seq
			b, _ := json.Marshal(e.Data)
			size += len(b)
		}
		if size > 1<<20 {
			t.Fatalf("a page of %d events holds %d bytes of data", len(list.Events), size)
		}
		pages++
		total += len(list.Events)
	}
	if total != count+1 || pages < 3 {
		t.Fatalf("%d events in %d pages", total, pages)
	}
}

// TestRecreatedSandboxContinuesSeq: a sandbox deleted and created again under the same
// id continues after the old one's last seq (its sandbox.deleted included): a client
// resuming from it, by since or Last-Event-ID, gets the new sandbox's events; message
// ids are not reused.
func TestRecreatedSandboxContinuesSeq(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("re1")
	var posted struct{ Seq uint64 }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/re1/events", map[string]any{"type": "agent.a"}).json(t, &posted)
	var m1, m2 struct{ ID string }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/re1/messages", nil).json(t, &m1)
	ts.must(http.StatusNoContent, "DELETE", "/v1/sandboxes/re1", nil)
	ts.sandbox("re1")
	deletedSeq := posted.Seq + 1
	var list struct{ Events []eventJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/re1/events?since="+strconv.FormatUint(deletedSeq, 10), nil).json(t, &list)
	if len(list.Events) != 1 || list.Events[0].Type != "sandbox.created" || list.Events[0].Seq != deletedSeq+1 {
		t.Fatalf("events after the old sandbox's last seq %d: %+v", deletedSeq, list.Events)
	}
	evs := ts.readSSE("/v1/sandboxes/re1/events/stream", strconv.FormatUint(posted.Seq, 10), 20*time.Second, func(evs []sseEvent) bool { return len(evs) == 1 })
	if len(evs) != 1 || evs[0].id != strconv.FormatUint(deletedSeq+1, 10) {
		t.Fatalf("stream resumed from the old sandbox's seq: %+v", evs)
	}
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/re1/messages", nil).json(t, &m2)
	if m1.ID == m2.ID {
		t.Fatalf("message id %s reused", m2.ID)
	}
}
