package gateway

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/actor"
	"github.com/sandgate/sandgate/runtime"
)

// TestErrorMessages: a mapped error's message reads as a sentence for the client: no
// package prefixes, and not the code again in words.
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("%w: sandbox %q exists with different settings", actor.ErrConflict, "a1"),
			http.StatusConflict, codeConflict, `sandbox "a1" exists with different settings`},
		{fmt.Errorf("%w: terminal size %dx%d", actor.ErrInvalid, 0, 5),
			http.StatusBadRequest, codeInvalidArgument, "terminal size 0x5"},
		{actor.ErrConflict, http.StatusConflict, codeConflict, "conflict"},
		{fmt.Errorf("%w: sandbox %q", actor.ErrExpired, "sh2"), http.StatusGone, codeExpired, `sandbox expired: sandbox "sh2"`},
		{fmt.Errorf("failed to start: %w", runtime.ErrTooManyProcesses),
			http.StatusTooManyRequests, codeBudgetExceeded, "failed to start: too many processes"},
		// A full workspace is its disk budget; the node's own storage on a full disk is
		// unavailable, not the sandbox's budget.
		{fmt.Errorf("runtime: failed to write %q: %w", "f", &fs.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}),
			http.StatusTooManyRequests, codeBudgetExceeded,
			`the workspace is full (its disk_bytes budget, or the server's disk): failed to write "f": write f: no space left on device`},
		{fmt.Errorf("%w: failed to save sandbox %q: %w", actor.ErrUnavailable, "s", &fs.PathError{Op: "write", Path: "actors.db", Err: syscall.ENOSPC}),
			http.StatusServiceUnavailable, codeUnavailable, `failed to save sandbox "s": write actors.db: no space left on device`},
	}
	for _, tt := range tests {
		e := toAPIError(tt.err)
		if e.Status != tt.status || e.Code != tt.code || e.Message != tt.msg {
			t.Errorf("%v: %d %s %q, want %d %s %q", tt.err, e.Status, e.Code, e.Message, tt.status, tt.code, tt.msg)
		}
	}
}

// TestCorruptIsUnavailable: a sandbox whose stored records cannot be read answers 503
// unavailable with a Retry-After, and the message says its stored state could not be
// read.
func TestCorruptIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		msg  string
	}{
		{"typed", &actor.CorruptError{Sandbox: "sb1", Detail: "bbolt: invalid page type: 12: 0"},
			`sandbox "sb1" is unavailable: its stored state could not be read (bbolt: invalid page type: 12: 0)`},
		{"wrapped", fmt.Errorf("actor: failed to read events: %w", &actor.CorruptError{Sandbox: "sb1", Detail: "x"}),
			`failed to read events: sandbox "sb1" is unavailable: its stored state could not be read (x)`},
		{"sentinel", fmt.Errorf("%w: sandbox %q", actor.ErrCorrupt, "sb2"),
			`stored state could not be read: sandbox "sb2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := toAPIError(tt.err)
			if e.Status != http.StatusServiceUnavailable || e.Code != codeUnavailable || e.Message != tt.msg {
				t.Errorf("%d %s %q, want 503 unavailable %q", e.Status, e.Code, e.Message, tt.msg)
			}
			if e.RetryAfter <= 0 {
				t.Errorf("no Retry-After")
			}
		})
	}
}

// TestUnavailableHasRetryAfter: every 503 carries Retry-After, also one made where no
// retry time was given (a request that timed out, a node-to-node failure); 429 keeps
// its own (none for a full workspace, where waiting frees nothing).
func TestUnavailableHasRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"timed out", context.DeadlineExceeded, "1"},
		{"made without one", errorf(http.StatusServiceUnavailable, codeUnavailable, "the other node failed"), "1"},
		{"its own", errorf(http.StatusServiceUnavailable, codeUnavailable, "later").retry(3 * time.Second), "3"},
		{"full workspace", &fs.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}, ""},
		{"not found", actor.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeAPIError(w, toAPIError(tt.err))
			if got := w.Header().Get("Retry-After"); got != tt.want {
				t.Fatalf("%d: Retry-After %q, want %q", w.Code, got, tt.want)
			}
		})
	}
}
