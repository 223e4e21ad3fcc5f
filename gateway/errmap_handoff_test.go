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
