package gateway

import (
	"strings"
	"testing"
)

var idTests = []struct {
	name string
	id   string
	ok   bool
}{
	{"simple", "dev1", true},
	{"server made", "sb_9f2c01", true},
	{"dash and underscore", "a-b_c", true},
	{"starts with digit", "1abc", true},
	{"max length", strings.Repeat("a", 63), true},
	{"empty", "", false},
	{"too long", strings.Repeat("a", 64), false},
	{"upper case", "Dev1", false},
	{"starts with dash", "-a", false},
	{"starts with underscore", "_a", false},
	{"slash", "a/b", false},
	{"dot", "a.b", false},
	{"space", "a b", false},
	{"unicode", "é", false},
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, tt := range idTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := validID(tt.id); got != tt.ok {
				t.Fatalf("validID(%q) = %v, want %v", tt.id, got, tt.ok)
			}
		})
	}
}

func FuzzValidID(f *testing.F) {
	for _, tt := range idTests {
		f.Add(tt.id)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validID(s) {
			return
		}
		if len(s) < 1 || len(s) > 63 || strings.ContainsAny(s[:1], "_-") {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789_-", r) {
				t.Fatalf("accepted %q with %q", s, r)
			}
		}
	})
}
