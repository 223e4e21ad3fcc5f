package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func testChunks() []chunk {
	var cs []chunk
	for i := range 8 {
		s := "stdout"
		if i%3 == 2 {
			s = "stderr"
		}
		cs = append(cs, chunk{s, fmt.Sprintf("line %d of output\n", i)})
	}
	return cs
}

func allOutput(cs []chunk) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.data)
	}
	return b.String()
}

func collect(t *testing.T, c *Client, offset int64) (out string, evs []OutputEvent, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	for ev, err := range c.ProcessOutput(ctx, "sb1", "proc_1", offset) {
		if err != nil {
			return b.String(), evs, err
		}
		evs = append(evs, ev)
		b.Write(ev.Data)
	}
	return b.String(), evs, nil
}

func TestProcessOutputResumes(t *testing.T) {
	t.Parallel()
	cs := testChunks()
	full := allOutput(cs)
	tests := []struct {
		name    string
		perConn []int
		offset  int64
		dropped int64
		retries int
		want    string
		wantErr bool
	}{
		{"no drop", nil, 0, 0, 3, full, false},
		{"drops resume exactly once", []int{2, 0, 3, 1}, 0, 0, 3, full, false},
		{"start mid-chunk", nil, 5, 0, 3, full[5:], false},
		{"resume trims overlap", []int{1}, 3, 0, 3, full[3:], false},
		{"too many empty drops", []int{0, 0, 0}, 0, 0, 2, "", true},
		{"progress resets retries", []int{1, 0, 1, 0, 1, 0, 1}, 0, 0, 2, full, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &outputPeer{chunks: cs, perConn: tt.perConn, dropped: tt.dropped}
			c := newTestClient(t, p, tt.retries)
			got, evs, err := collect(t, c, tt.offset)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if n := len(p.requests()); n != tt.retries+1 {
					t.Errorf("made %d requests, want %d", n, tt.retries+1)
				}
				return
			}
			if got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
			last := evs[len(evs)-1]
			if last.Type != OutputExit || last.ExitCode == nil || *last.ExitCode != 3 || last.Signal != nil {
				t.Errorf("last event = %+v, want exit 3", last)
			}
			// Each reconnect asks for the offset reached, in the query and Last-Event-ID.
			reqs := p.requests()
			var reached int64 = tt.offset
			for i, ev := range evs {
				if i > 0 && ev.Type == OutputData && ev.Offset != reached {
					t.Errorf("event %d at offset %d, want %d", i, ev.Offset, reached)
				}
				reached = ev.Offset + int64(len(ev.Data))
			}
			if len(reqs) != len(tt.perConn)+1 {
				t.Errorf("made %d requests, want %d", len(reqs), len(tt.perConn)+1)
			}
			for i, h := range reqs[1:] {
				if h.Get("X-Offset") == "" || h.Get("X-Offset") != h.Get("Last-Event-Id") {
					t.Errorf("request %d: offset %q, Last-Event-ID %q", i+1, h.Get("X-Offset"), h.Get("Last-Event-Id"))
				}
			}
		})
	}
}

func TestProcessOutputGap(t *testing.T) {
	t.Parallel()
	cs := testChunks()
	p := &outputPeer{chunks: cs, dropped: int64(len(cs[0].data) + len(cs[1].data))}
	c := newTestClient(t, p, 1)
	got, evs, err := collect(t, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != OutputGap || evs[0].From != 0 || evs[0].To != p.dropped {
		t.Fatalf("first event = %+v, want gap [0,%d)", evs[0], p.dropped)
	}
	if want := allOutput(cs[2:]); got != want {
		t.Fatalf("output = %q, want %q", got, want)
	}
	if evs[1].Stream != "stderr" {
		t.Fatalf("second event stream = %q, want stderr", evs[1].Stream)
	}
}

func TestProcessOutputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		retries  int
		wantReqs int
		wantCode string
	}{
		{"not found is not retried", http.StatusNotFound, 3, 1, CodeNotFound},
		{"unavailable is retried", http.StatusServiceUnavailable, 2, 3, CodeUnavailable},
		{"no retries", http.StatusServiceUnavailable, -1, 1, CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &outputPeer{status: tt.status}
			c := newTestClient(t, p, tt.retries)
			_, _, err := collect(t, c, 0)
			if ErrorCode(err) != tt.wantCode {
				t.Fatalf("err = %v, want code %s", err, tt.wantCode)
			}
			if n := len(p.requests()); n != tt.wantReqs {
				t.Fatalf("made %d requests, want %d", n, tt.wantReqs)
			}
		})
	}
}

func TestProcessOutputBreak(t *testing.T) {
	t.Parallel()
	p := &outputPeer{chunks: testChunks()}
	c := newTestClient(t, p, 1)
	n := 0
	for ev, err := range c.ProcessOutput(t.Context(), "sb1", "proc_1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == OutputData {
			n++
			break
		}
	}
	if n != 1 {
		t.Fatalf("got %d events before break", n)
	}
}

func TestProcessOutputCanceled(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-block:
		}
	})
	c := newTestClient(t, h, 3)
	t.Cleanup(func() { close(block) })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	var last error
	for _, err := range c.ProcessOutput(ctx, "sb1", "proc_1", 0) {
		last = err
	}
	if !errors.Is(last, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", last)
	}
}

func FuzzDecodeOutputEvent(f *testing.F) {
	f.Add("output", `{"stream": "stdout", "offset": 18100, "data": "aGkK"}`)
	f.Add("gap", `{"from": 0, "to": 4096}`)
	f.Add("exit", `{"exit_code": 0, "signal": null}`)
	f.Add("exit", `{"exit_code": null, "signal": "SIGKILL"}`)
	f.Add("exit", `{"signal": 9}`)
	f.Fuzz(func(t *testing.T, event, data string) {
		out, ok, err := decodeOutputEvent(sseEvent{Event: event, Data: data})
		known := event == "output" || event == "gap" || event == "exit"
		if known && ok == (err != nil) || !known && (ok || err != nil) {
			t.Fatalf("ok %v and err %v for %q %q", ok, err, event, data)
		}
		if ok && string(out.Type) != event {
			t.Fatalf("type %q from event %q", out.Type, event)
		}
	})
}
