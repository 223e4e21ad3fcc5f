package gateway

import (
	"net/http"
	"testing"
	"time"
)

// TestForwardServedThenBroken: the owner serves a forwarded request and its connection
// breaks before the answer leaves (as when it goes down right then). A message post
// and a take of messages are not sent again, which would post twice or hide a message
// nobody received: the client gets 503 with Retry-After, and the owner holds exactly
// what one run did. A read is sent again and answered.
func TestForwardServedThenBroken(t *testing.T) {
	ip, tr, via, owner := interposedTrio(t)
	sb := tr.ownedBy("replay", "a")
	mustSetUp(t, via, http.StatusCreated, "POST", "/v1/sandboxes", map[string]any{"id": sb})
	msgs := "/v1/sandboxes/" + sb + "/messages"
	broken := func(method, path string, body any) response {
		t.Helper()
		via.must(http.StatusOK, "GET", "/v1/sandboxes/"+sb, nil) // a kept-alive connection to the owner's address
		ip.served.Store(true)
		r := via.do(method, path, body)
		select {
		case <-ip.refused:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s %s never reached the owner's address", method, path)
		}
		return r
	}
	want503 := func(what string, r response) {
		t.Helper()
		if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s served and then broken off: %d %s (Retry-After %q), want 503 unavailable with Retry-After",
				what, r.status, r.body, r.header.Get("Retry-After"))
		}
	}

	want503("a message post", broken("POST", msgs, map[string]any{"data": map[string]string{"v": "once"}}))
	var taken struct {
		Messages []struct {
			Data     map[string]string `json:"data"`
			Attempts int               `json:"attempts"`
		} `json:"messages"`
	}
	owner.must(http.StatusOK, "GET", msgs+"?max=10&visibility_ms=1", nil).json(t, &taken)
	if len(taken.Messages) != 1 || taken.Messages[0].Data["v"] != "once" {
		t.Fatalf("the owner's queue after one post: %+v, want the message once", taken.Messages)
	}

	want503("a take", broken("GET", msgs+"?max=10&visibility_ms=60000", nil))
	owner.must(http.StatusOK, "GET", msgs+"?max=10", nil).json(t, &taken)
	if len(taken.Messages) != 0 {
		t.Fatalf("a take after the broken one got %+v: the broken take was not served, or served twice", taken.Messages)
	}

	if r := broken("GET", "/v1/sandboxes/"+sb, nil); r.status != http.StatusOK {
		t.Fatalf("a read served and then broken off: %d %s, want it sent again and answered", r.status, r.body)
	}
}
