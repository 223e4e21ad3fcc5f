package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
)

func TestEventsAndMessages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ev1")
	var posted struct{ Seq uint64 }
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ev1/events", map[string]any{"type": "agent.progress", "data": map[string]int{"pct": 50}}).json(t, &posted)
	for _, bad := range []map[string]any{{"type": "sandbox.created"}, {"type": "agent."}, {"type": "agent.x", "data": []int{1}}} {
		if r := ts.do("POST", "/v1/sandboxes/ev1/events", bad); r.status != http.StatusBadRequest {
			t.Fatalf("post %v: %d", bad, r.status)
		}
	}
	var list struct{ Events []eventJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/ev1/events", nil).json(t, &list)
	if len(list.Events) < 2 || list.Events[0].Type != "sandbox.created" {
		t.Fatalf("events %+v", list)
	}
	for i, e := range list.Events {
		if e.Seq != list.Events[0].Seq+uint64(i) {
			t.Fatalf("seq not consecutive: %+v", list.Events)
		}
	}
	last := list.Events[len(list.Events)-1]
	if last.Seq != posted.Seq || last.Type != "agent.progress" {
		t.Fatalf("last %+v, posted seq %d", last, posted.Seq)
	}
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/ev1/events?since="+strconv.FormatUint(posted.Seq-1, 10)+"&limit=1", nil).json(t, &list)
	if len(list.Events) != 1 || list.Events[0].Seq != posted.Seq {
		t.Fatalf("since/limit: %+v", list)
	}

	// The stream replays from since, then follows live events: agent.done is posted
	// only once the replay has reached the last event that existed.
	events := ts.readSSE("/v1/sandboxes/ev1/events/stream?since=0", "", 10*time.Second, func(evs []sseEvent) bool {
		var e eventJSON
		_ = json.Unmarshal([]byte(evs[len(evs)-1].data), &e)
		if e.Seq == posted.Seq {
			ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ev1/events", map[string]any{"type": "agent.done"})
		}
		return e.Type == "agent.done"
	})
	if len(events) < 3 || events[0].id != "1" {
		t.Fatalf("stream %+v", events)
	}

	// Messages: a long poll is answered when a message arrives. The API gives no sign
	// that the poll is waiting, so the post only tends to come second (a head start);
	// the assertions hold in either order, and the actor's tests time the wake-up.
	got := make(chan response, 1)
	go func() {
		r, err := ts.send(testToken, "GET", "/v1/sandboxes/ev1/messages?wait_ms=10000", nil)
		if err != nil {
			r.status = 0
		}
		got <- r
	}()
	var id struct{ ID string }
	time.Sleep(20 * time.Millisecond)
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/ev1/messages", map[string]any{"data": map[string]string{"task": "build"}}).json(t, &id)
	select {
	case r := <-got:
		var m struct{ Messages []messageJSON }
		if r.status != http.StatusOK {
			t.Fatalf("long poll: %d %s", r.status, r.body)
		}
		r.json(t, &m)
		if len(m.Messages) != 1 || m.Messages[0].ID != id.ID || string(m.Messages[0].Data) != `{"task":"build"}` {
			t.Fatalf("took %+v", m.Messages)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("long poll not answered")
	}
	var empty struct{ Messages []messageJSON }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/ev1/messages", nil).json(t, &empty)
	if len(empty.Messages) != 0 {
		t.Fatalf("message taken twice: %+v", empty)
	}
}

// TestEventDataIsObject: built-in events carry an object as data over both the list and
// the stream: sandbox.created's labels are {} for a sandbox made without labels, and the
// final sandbox.deleted has {}.
func TestEventDataIsObject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("ed1")
	var list struct{ Events []map[string]json.RawMessage }
	ts.must(http.StatusOK, "GET", "/v1/sandboxes/ed1/events", nil).json(t, &list)
	if len(list.Events) != 1 || string(list.Events[0]["data"]) != `{"labels":{}}` {
		t.Fatalf("events %s", ts.do("GET", "/v1/sandboxes/ed1/events", nil).body)
	}
	deleted := make(chan response, 1)
	evs := ts.readSSE("/v1/sandboxes/ed1/events/stream", "", 20*time.Second, func(evs []sseEvent) bool {
		if len(evs) == 1 {
			go func() {
				r, _ := ts.send(testToken, "DELETE", "/v1/sandboxes/ed1", nil)
				deleted <- r
			}()
		}
		return len(evs) == 2
	})
	if r := <-deleted; r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	var last struct {
		Type string
		Data json.RawMessage
	}
	if err := json.Unmarshal([]byte(evs[1].data), &last); err != nil {
		t.Fatal(err)
	}
	if last.Type != "sandbox.deleted" || string(last.Data) != "{}" {
		t.Fatalf("last event %s", evs[1].data)
	}
}

func TestRenderEventData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, want string
	}{
		{name: "absent", data: "", want: "{}"},
		{name: "null", data: "null", want: "{}"},
		{name: "object", data: `{"a":1}`, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var raw json.RawMessage
			if tt.data != "" {
				raw = json.RawMessage(tt.data)
			}
			b, err := json.Marshal(renderEvent(actor.Event{Seq: 1, Type: "x", Data: raw}).Data)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("data %s, want %s", b, tt.want)
			}
		})
	}
}

// TestBadResumePoint: a bad Last-Event-ID is 400 naming the header, and a bad since or
// offset names the query parameter.
func TestBadResumePoint(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("rp")
	var p processJSON
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/rp/processes", map[string]any{"command": "true"}).json(t, &p)
	for _, path := range []string{"/v1/sandboxes/rp/events", "/v1/sandboxes/rp/events/stream", "/v1/sandboxes/rp/processes/" + p.ID + "/output"} {
		for _, name := range []string{"Last-Event-ID", "query"} {
			req, _ := http.NewRequest("GET", ts.url+path, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			want := "Last-Event-ID"
			if name == "Last-Event-ID" {
				req.Header.Set("Last-Event-ID", "abc")
			} else {
				want = "since"
				if strings.HasSuffix(path, "/output") {
					want = "offset"
				}
				req.URL.RawQuery = want + "=abc"
			}
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := response{status: resp.StatusCode, header: resp.Header, body: body}
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument || !strings.Contains(string(body), want) {
				t.Errorf("%s with a bad %s: %d %s, want 400 naming %s", path, name, r.status, body, want)
			}
		}
	}
}

// TestEventTypeLimit: a posted event's type may be up to actor.MaxEventTypeBytes long;
// a longer one is 400 naming the limit (it said only "must be agent.<name>").
func TestEventTypeLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.sandbox("evt")
	long := "agent." + strings.Repeat("x", actor.MaxEventTypeBytes-len("agent."))
	ts.must(http.StatusCreated, "POST", "/v1/sandboxes/evt/events", map[string]any{"type": long})
	r := ts.do("POST", "/v1/sandboxes/evt/events", map[string]any{"type": long + "x"})
	if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidArgument ||
		!strings.Contains(string(r.body), strconv.Itoa(actor.MaxEventTypeBytes)) {
		t.Fatalf("a type over the limit: %d %s, want 400 invalid_argument naming the limit", r.status, r.body)
	}
}
