package main

import (
	"strings"
	"testing"
)

func TestVersionPrint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		v     buildVersion
		out   string
		short string
	}{
		{"go install", buildVersion{module: "v1.2.3", goVer: "go1.26.0"}, "sandgate v1.2.3\ngo go1.26.0\n", "v1.2.3"},
		{"checkout", buildVersion{module: "(devel)", revision: "0123456789abcdef", time: "2026-11-26T14:00:00Z", modified: true, goVer: "go1.26.0"},
			"sandgate (devel)\nrevision 0123456789abcdef (modified)\nbuilt from a commit of 2026-11-26T14:00:00Z\ngo go1.26.0\n", "0123456789ab"},
		{"nothing known", buildVersion{module: "(unknown)"}, "sandgate (unknown)\n", "(unknown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			tt.v.print(&b)
			if b.String() != tt.out || tt.v.short() != tt.short {
				t.Errorf("print %q short %q, want %q and %q", b.String(), tt.v.short(), tt.out, tt.short)
			}
		})
	}
}
