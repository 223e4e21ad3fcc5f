package webui

import (
	"regexp"
	"strings"
	"testing"
)

// idPattern is the id syntax validID replaced, kept here as the reference it must
// agree with.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

var validIDCases = []struct {
	name string
	id   string
	want bool
}{
	{name: "empty", id: "", want: false},
	{name: "one letter", id: "a", want: true},
	{name: "one digit", id: "7", want: true},
	{name: "server made", id: "sb_9f2c", want: true},
	{name: "dash inside", id: "term-1", want: true},
	{name: "underscore and dash at the end", id: "a_-", want: true},
	{name: "leading underscore", id: "_a", want: false},
	{name: "leading dash", id: "-x", want: false},
	{name: "upper case", id: "Dev1", want: false},
	{name: "dot", id: "a.b", want: false},
	{name: "slash", id: "a/b", want: false},
	{name: "space", id: "a b", want: false},
	{name: "trailing newline", id: "a\n", want: false},
	{name: "not ASCII", id: "é", want: false},
	{name: "63 characters", id: strings.Repeat("a", 63), want: true},
	{name: "64 characters", id: strings.Repeat("a", 64), want: false},
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, tc := range validIDCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := validID(tc.id); got != tc.want {
				t.Errorf("validID(%q) = %v, want %v", tc.id, got, tc.want)
			}
			if ref := idPattern.MatchString(tc.id); ref != tc.want {
				t.Errorf("the reference pattern says %v for %q: the table is wrong", ref, tc.id)
			}
		})
	}
}

// FuzzValidID checks validID against the regexp it replaced.
func FuzzValidID(f *testing.F) {
	for _, tc := range validIDCases {
		f.Add(tc.id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := validID(id), idPattern.MatchString(id); got != want {
			t.Fatalf("validID(%q) = %v, the pattern says %v", id, got, want)
		}
	})
}
