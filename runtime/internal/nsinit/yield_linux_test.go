package nsinit

import (
	"testing"
	"time"
)

// TestSchedYield checks when schedYield yields: at its first call, then only once
// yieldEvery has passed since the last yield (not since the last call).
func TestSchedYield(t *testing.T) {
	t0 := time.Now()
	steps := []struct {
		name string
		at   time.Duration
		want bool
	}{
		{"first call", 0, true},
		{"at once again", 0, false},
		{"just before the interval", yieldEvery - time.Microsecond, false},
		{"at the interval", yieldEvery, true},
		{"an interval after a call that did not yield", 2*yieldEvery - time.Microsecond, false},
		{"an interval after the last yield", 2 * yieldEvery, true},
	}
	var y schedYield
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := y.maybe(t0.Add(s.at)); got != s.want {
				t.Fatalf("maybe at +%v = %v, want %v", s.at, got, s.want)
			}
		})
	}
}
