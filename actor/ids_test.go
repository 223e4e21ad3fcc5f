package actor

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runtime"
)

var idTests = []struct {
	name string
	id   string
	ok   bool
}{
	{name: "simple", id: "dev1", ok: true},
	{name: "server made", id: "sb_0123456789abcdef", ok: true},
	{name: "dash", id: "a-b_c", ok: true},
	{name: "digit first", id: "1abc", ok: true},
	{name: "max len", id: strings.Repeat("a", 63), ok: true},
	{name: "empty", id: "", ok: false},
	{name: "too long", id: strings.Repeat("a", 64), ok: false},
	{name: "upper", id: "Dev", ok: false},
	{name: "leading dash", id: "-a", ok: false},
	{name: "leading underscore", id: "_a", ok: false},
	{name: "slash", id: "a/b", ok: false},
	{name: "dot", id: "a.b", ok: false},
	{name: "nul", id: "a\x00", ok: false},
	{name: "unicode", id: "é", ok: false},
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, tc := range idTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := runtime.ValidID(tc.id); got != tc.ok {
				t.Errorf("runtime.ValidID(%q) = %v, want %v", tc.id, got, tc.ok)
			}
		})
	}
	if id := newID("sb_"); !runtime.ValidID(id) || len(id) != 19 {
		t.Errorf("newID = %q", id)
	}
}

func FuzzValidID(f *testing.F) {
	for _, tc := range idTests {
		f.Add(tc.id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !runtime.ValidID(id) {
			return
		}
		// A valid id is safe as a path element and as a storage key prefix.
		if strings.ContainsAny(id, "/.\x00") || strings.ToLower(id) != id || len(id) > 63 {
			t.Fatalf("validID accepted %q", id)
		}
	})
}
