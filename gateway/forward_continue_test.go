package gateway

import (
	"net/http"
	"testing"
	"time"
)

// TestForwardBrokenAfterContinue: the owner tells a streamed upload to come (100
// Continue, which the forwarding node passes on to its client), reads some of it and
// breaks the connection off. The client is answered 503 unavailable with Retry-After,
// never a success for a file that was not written.
func TestForwardBrokenAfterContinue(t *testing.T) {
	ip, tr, via, owner := interposedTrio(t)
	sb := tr.ownedBy("broken", "a")
	owner.sandbox(sb)
	ip.broken.Store(true)
	r := via.do("PUT", filesPath(sb)+"?path=big", make([]byte, 3<<20))
	select {
	case <-ip.refused:
	case <-time.After(30 * time.Second):
		t.Fatal("the upload never reached the owner's address")
	}
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("an upload the owner broke off: %d %q (Retry-After %q), want 503 unavailable with Retry-After",
			r.status, r.body, r.header.Get("Retry-After"))
	}
	owner.must(http.StatusNotFound, "GET", filesPath(sb)+"?path=big", nil)
}
