package main

import (
	"testing"

	"github.com/sandgate/sandgate/sdk"
)

func TestExitStatus(t *testing.T) {
	t.Parallel()
	code := func(n int) *int { return &n }
	sig := func(s string) *sdk.Signal { v := sdk.Signal(s); return &v }
	tests := []struct {
		name string
		code *int
		sig  *sdk.Signal
		want int
	}{
		{"exit 0", code(0), nil, 0},
		{"exit 5", code(5), nil, 5},
		{"exit 255", code(255), nil, 255},
		{"code out of range", code(300), nil, 255},
		{"negative code", code(-1), nil, 255},
		{"nothing known", nil, nil, 255},
		{"SIGKILL", nil, sig("SIGKILL"), 137},
		{"without SIG", nil, sig("TERM"), 143},
		{"lower case", nil, sig("sigint"), 130},
		{"the first", nil, sig("SIGHUP"), 129},
		{"the last", nil, sig("SIGSYS"), 159},
		{"STKFLT", nil, sig("SIGSTKFLT"), 144},
		{"a number", nil, sig("34"), 162},
		{"unknown name", nil, sig("SIGNOPE"), 255},
		{"number too large", nil, sig("200"), 255},
		{"empty signal, code used", code(3), sig(""), 3},
		{"signal wins over code", code(0), sig("SIGKILL"), 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := exitStatus(tt.code, tt.sig); got != tt.want {
				t.Fatalf("exitStatus = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLookupCommand(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range commands {
		if seen[c.name] {
			t.Errorf("command %q listed twice", c.name)
		}
		seen[c.name] = true
	}
	for _, name := range commandOrder {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, ok := lookupCommand(name)
			if name == "serve" || name == "version" {
				if ok {
					t.Fatalf("%s is dispatched on its own, but lookupCommand found it", name)
				}
				return
			}
			if !ok || c.run == nil || c.summary == "" {
				t.Fatalf("lookupCommand(%q) = %+v, %v", name, c, ok)
			}
		})
	}
	if _, ok := lookupCommand("nope"); ok {
		t.Fatal("lookupCommand found an unknown command")
	}
}
