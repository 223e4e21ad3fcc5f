package deptest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules Rules
		want  int
	}{
		{"transitive dependency found", Rules{Forbidden: map[string]string{"testing": "x"}}, 1},
		{"prefix rule", Rules{Forbidden: map[string]string{"encoding/": "x"}}, 1},
		{"direct import found", Rules{ForbiddenDirect: map[string]string{"os/exec": "x"}}, 1},
		{"clean", Rules{Forbidden: map[string]string{"net/http": "x"}}, 0},
		{"our package imports it", Rules{ForbiddenInOurs: map[string]string{"os/exec": "x"}}, 1},
		{"only a dependency links it", Rules{ForbiddenInOurs: map[string]string{"syscall": "x"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			Check(r, ".", tt.rules)
			if len(r.errs) < tt.want || (tt.want == 0 && len(r.errs) > 0) {
				t.Fatalf("got errors %q, want %d", r.errs, tt.want)
			}
		})
	}
}
