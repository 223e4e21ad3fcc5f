package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// eventPeer serves GET …/events/stream: events 1..total; connection i sends
// perConn[i] events and ends; later connections send the rest and then hold the
// stream open until the client leaves. Odd seqs are sent as the whole event object,
// even seqs as bare data with the seq in the SSE id.
type eventPeer struct {
	total   int64
	perConn []int

	mu    sync.Mutex
	since []string
}

func (p *eventPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	n := len(p.since)
	p.since = append(p.since, r.URL.Query().Get("since")+"/"+r.Header.Get("Last-Event-ID"))
	p.mu.Unlock()
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	w.Header().Set("Content-Type", "text/event-stream")
	limit := int(p.total)
	if n < len(p.perConn) {
		limit = p.perConn[n]
	}
	// Replay one already-seen event, which the client must skip.
	for seq := max(since, 1); seq <= p.total && limit > 0; seq++ {
		data, _ := json.Marshal(map[string]any{"n": seq})
		if seq%2 == 1 {
			b, _ := json.Marshal(Event{Seq: seq, Type: "agent.step", At: time.Unix(seq, 0).UTC(), Data: data})
			fmt.Fprintf(w, "event: agent.step\nid: %d\ndata: %s\n\n", seq, b)
		} else {
			fmt.Fprintf(w, "event: agent.step\nid: %d\ndata: %s\n\n", seq, data)
		}
		if seq > since {
			limit--
		}
	}
	w.(http.Flusher).Flush()
	if n < len(p.perConn) {
		return
	}
	<-r.Context().Done()
}

func TestStreamEventsResumes(t *testing.T) {
	t.Parallel()
	p := &eventPeer{total: 6, perConn: []int{2, 0, 3}}
	c := newTestClient(t, p, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var seqs []int64
	var last error
	for ev, err := range c.StreamEvents(ctx, "sb1", 0) {
		if err != nil {
			last = err
			break
		}
		seqs = append(seqs, ev.Seq)
		var d struct{ N int64 }
		if json.Unmarshal(ev.Data, &d) != nil || d.N != ev.Seq || ev.Type != "agent.step" {
			t.Errorf("event %+v: data %s does not match", ev, ev.Data)
		}
		if ev.Seq%2 == 1 && !ev.At.Equal(time.Unix(ev.Seq, 0)) {
			t.Errorf("event %d: at = %v", ev.Seq, ev.At)
		}
		if ev.Seq == p.total {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("final err = %v, want canceled", last)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5 6]" {
		t.Fatalf("seqs = %v", seqs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if want := "[/ 2/2 2/2 5/5]"; fmt.Sprint(p.since) != want {
		t.Fatalf("since/Last-Event-ID per request = %v, want %s", p.since, want)
	}
}

func TestDecodeStreamEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      sseEvent
		want    Event
		ok      bool
		wantErr bool
	}{
		{"object", sseEvent{Data: `{"seq":3,"type":"process.exited","at":"2026-01-02T03:04:05Z","data":{"x":1}}`},
			Event{Seq: 3, Type: "process.exited", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Data: json.RawMessage(`{"x":1}`)}, true, false},
		{"bare data", sseEvent{Event: "agent.x", ID: "9", HasID: true, Data: `{"seq_like":1}`},
			Event{Seq: 9, Type: "agent.x", Data: json.RawMessage(`{"seq_like":1}`)}, true, false},
		{"id only skipped", sseEvent{ID: "4", HasID: true}, Event{}, false, false},
		{"no seq anywhere", sseEvent{Data: `{}`}, Event{}, false, true},
		{"not json", sseEvent{ID: "1", HasID: true, Data: `nope`}, Event{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := decodeStreamEvent(tt.in)
			if (err != nil) != tt.wantErr || ok != tt.ok {
				t.Fatalf("ok, err = %v, %v; want %v, err %v", ok, err, tt.ok, tt.wantErr)
			}
			if ok && (got.Seq != tt.want.Seq || got.Type != tt.want.Type || !got.At.Equal(tt.want.At) || string(got.Data) != string(tt.want.Data)) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzDecodeStreamEvent(f *testing.F) {
	f.Add("agent.x", "3", true, `{"seq":3,"type":"agent.x","at":"2026-01-02T03:04:05Z","data":{}}`)
	f.Add("agent.x", "9", true, `{"n":1}`)
	f.Add("", "", false, `{}`)
	f.Add("", "x", true, `[1,2]`)
	f.Fuzz(func(t *testing.T, event, id string, hasID bool, data string) {
		e, ok, err := decodeStreamEvent(sseEvent{Event: event, ID: id, HasID: hasID, Data: data})
		if ok && (err != nil || e.Seq == 0) {
			t.Fatalf("ok event %+v with err %v", e, err)
		}
		if ok && e.Data != nil && !json.Valid(e.Data) {
			t.Fatalf("event data %q is not JSON", e.Data)
		}
	})
}
