package gateway

import (
	"strings"
	"testing"
)

// TestNoNULArgv: an argv element with a NUL byte is refused by its index; a clean
// argv passes without formatting a name for each element.
func TestNoNULArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv []string
		want string // "" = accepted
	}{
		{"empty", nil, ""},
		{"clean", []string{"sh", "-c", "echo hi"}, ""},
		{"nul first", []string{"s\x00h"}, "argv[0] holds a NUL byte"},
		{"nul later", []string{"sh", "-c", "echo\x00hi"}, "argv[2] holds a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := noNULArgv(tt.argv)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestNoNULArgvAllocs: checking a clean argv allocates nothing (it runs on every exec).
// Not parallel: AllocsPerRun refuses that.
func TestNoNULArgvAllocs(t *testing.T) {
	argv := []string{"sh", "-c", "echo hi"}
	if n := testing.AllocsPerRun(100, func() { _ = noNULArgv(argv) }); n != 0 {
		t.Fatalf("%v allocations per clean argv, want 0", n)
	}
}
