package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestQuickstart runs the example against a real gateway at $SANDGATE_TEST_ADDR (token
// in $SANDGATE_TEST_TOKEN). The gateway's test suite starts one and sets the variable.
func TestQuickstart(t *testing.T) {
	addr := os.Getenv("SANDGATE_TEST_ADDR")
	if addr == "" {
		t.Skip("SANDGATE_TEST_ADDR is unset: this example needs a running gateway (the gateway's test suite provides one)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, addr, os.Getenv("SANDGATE_TEST_TOKEN"), &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`exec: "hello from sandgate", exit code 3`,
		"stdout: tick 1\n", "stdout: tick 2\n", "stdout: tick 3\n", "stderr: done\n",
		"process exited with code 0",
		"session: hi from sub",
		"deleted sb",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; output:\n%s", want, got)
		}
	}
}
