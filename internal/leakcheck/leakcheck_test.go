package leakcheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The checks must find each kind of leak, and find nothing once it is gone.
func TestLeaksFound(t *testing.T) {
	tests := []struct {
		name  string
		leak  func(t *testing.T) (cleanup func())
		found string
	}{
		{"goroutine", func(t *testing.T) func() {
			stop := make(chan struct{})
			go func() { <-stop }()
			return func() { close(stop) }
		}, "leaked goroutines"},
		{"fd", func(t *testing.T) func() {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}, "leaked fds"},
		{"child process", func(t *testing.T) func() {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
		}, "live child processes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fds, base := openFDs(), goroutineSet()
			cleanup := tt.leak(t)
			if msg := leaks(fds, base); !strings.Contains(msg, tt.found) {
				cleanup()
				t.Fatalf("leak not found: %q", msg)
			}
			cleanup()
			deadline := time.Now().Add(settle)
			for {
				msg := leaks(fds, base)
				if msg == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still reported after cleanup: %s", msg)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
