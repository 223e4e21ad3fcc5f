package runtime

import (
	"testing"
	"time"
)

func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name    string
		extends []time.Time
		valid   bool
	}{
		{"never extended", nil, false},
		{"extended into the past", []time.Time{now.Add(-time.Second)}, false},
		{"extended into the future", []time.Time{now.Add(time.Hour)}, true},
		{"an earlier deadline does not shorten it", []time.Time{now.Add(time.Hour), now.Add(-time.Hour)}, true},
		{"a later deadline revives it", []time.Time{now.Add(-time.Hour), now.Add(time.Hour)}, true},
		{"a deadline past the clock's range is forever", []time.Time{now.AddDate(1000, 0, 0)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, l := range []*Lease{NewLease(), {}} { // the zero value works as NewLease's
				var prev int64
				for _, u := range tt.extends {
					l.Extend(u)
					if d := l.deadline(); d < prev {
						t.Fatalf("the deadline went back from %d to %d", prev, d)
					} else {
						prev = d
					}
				}
				if l.Valid() != tt.valid {
					t.Fatalf("Valid = %v, want %v", !tt.valid, tt.valid)
				}
			}
		})
	}
}
