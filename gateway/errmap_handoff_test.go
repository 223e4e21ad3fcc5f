package gateway

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/cluster"
)

// TestHandoffIsUnavailable: a sandbox whose partition is being handed to another
// node is 503 unavailable with a Retry-After, bare or wrapped.
func TestHandoffIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"bare", cluster.ErrHandoff},
		{"wrapped", fmt.Errorf("failed to admit sandbox %q: %w", "sb1", cluster.ErrHandoff)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := toAPIError(tt.err)
			if e.Status != http.StatusServiceUnavailable || e.Code != codeUnavailable || e.RetryAfter != time.Second {
				t.Errorf("%v: %d %s retry %v, want 503 %s retry 1s", tt.err, e.Status, e.Code, e.RetryAfter, codeUnavailable)
			}
		})
	}
}

// TestPinRefusedIsUnavailable: a placement whose picked members all went down before
// their pins applied is 503 with a Retry-After, never the 404 a membership change
// naming an unknown member gets.
func TestPinRefusedIsUnavailable(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("failed to pin %s: %w: %s", "sb1", cluster.ErrUnknownMember, "n2")
	e := toAPIError(pinError(err, map[string]string{"pool": "gpu"}))
	if e.Status != http.StatusServiceUnavailable || e.Code != codeUnavailable || e.RetryAfter != time.Second {
		t.Errorf("%d %s retry %v, want 503 %s retry 1s", e.Status, e.Code, e.RetryAfter, codeUnavailable)
	}
	if e := toAPIError(err); e.Status != http.StatusNotFound {
		t.Errorf("outside a placement: %d, want 404", e.Status)
	}
}
