package gateway

import (
	"math"
	"testing"
	"time"

	"github.com/sandgate/sandgate/plugins"
)

// TestFromPluginBudgetSaturates: a plugin's millisecond budget too big for a
// time.Duration is the longest one (the operator's maximum then applies), not one
// that wrapped around: 18446744073710 ms was half a millisecond of idle TTL.
func TestFromPluginBudgetSaturates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ms   int64
		want time.Duration
	}{
		{"ordinary", 900000, 15 * time.Minute},
		{"just past 2^64 ns", 18446744073710, math.MaxInt64},
		{"largest", math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fromPluginBudget(plugins.Budget{IdleTTLMS: tt.ms, MaxDurationMS: tt.ms, MaxExecTimeoutMS: tt.ms})
			if b.IdleTTL != tt.want || b.MaxDuration != tt.want || b.MaxExecTimeout != tt.want {
				t.Fatalf("budget %+v, want every duration %v", b, tt.want)
			}
		})
	}
}
