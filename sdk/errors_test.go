package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestParseError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"contract shape", 404, `{"error": {"code": "not_found", "message": "sandbox \"x\" not found"}}`,
			Error{Status: 404, Code: "not_found", Message: `sandbox "x" not found`}},
		{"code kept even if unknown", 418, `{"error":{"code":"teapot","message":"short"}}`,
			Error{Status: 418, Code: "teapot", Message: "short"}},
		{"plain text body", 502, "bad gateway\n", Error{Status: 502, Code: "http_502", Message: "bad gateway"}},
		{"empty body maps status", 503, "", Error{Status: 503, Code: CodeUnavailable, Message: "Service Unavailable"}},
		{"json without code", 409, `{"error":{}}`, Error{Status: 409, Code: CodeConflict, Message: `{"error":{}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseError(tt.status, []byte(tt.body)); *got != tt.want {
				t.Fatalf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"empty", "", 0},
		{"seconds", "3", 3 * time.Second},
		{"negative", "-1", 0},
		{"date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"past date", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseRetryAfter(tt.in, now); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		writeAPIError(w, http.StatusTooManyRequests, CodeBudgetExceeded, "max processes 64")
	})
	c := newTestClient(t, h, 0)
	_, err := c.GetSandbox(context.Background(), "sb1")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err %T %v is not *Error", err, err)
	}
	if e.Status != 429 || e.Code != CodeBudgetExceeded || e.Message != "max processes 64" || e.RetryAfter != 2*time.Second {
		t.Fatalf("got %+v", e)
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if ErrorCode(wrapped) != CodeBudgetExceeded || IsNotFound(wrapped) || ErrorCode(errors.New("x")) != "" {
		t.Fatal("ErrorCode/IsNotFound do not see through wrapping")
	}
	for code, is := range map[string]func(error) bool{
		CodeNotFound: IsNotFound, CodeConflict: IsConflict, CodeUnauthorized: IsUnauthorized,
		CodeInvalidArgument: IsInvalidArgument, CodeUnavailable: IsUnavailable,
	} {
		if !is(&Error{Code: code}) || is(&Error{Code: "other"}) {
			t.Errorf("helper for %s is wrong", code)
		}
	}
	if got := e.Error(); got != "sandgate: budget_exceeded: max processes 64 (HTTP 429)" {
		t.Errorf("Error() = %q", got)
	}
}

func TestNewBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"127.0.0.1:7070", "ftp://x", "http://", "::"} {
		c := New(u, "", nil)
		if err := c.Healthz(context.Background()); err == nil {
			t.Errorf("New(%q): Healthz succeeded", u)
		}
	}
}

func FuzzParseError(f *testing.F) {
	f.Add(404, []byte(`{"error": {"code": "not_found", "message": "x"}}`))
	f.Add(503, []byte(""))
	f.Add(418, []byte(`{"error":{"code":""}}`))
	f.Add(502, []byte("<html>bad gateway</html>"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := parseError(status, body)
		if e.Status != status || e.Code == "" || e.Message == "" && status >= 100 && status < 600 && http.StatusText(status) != "" {
			t.Fatalf("parseError(%d, %q) = %+v", status, body, e)
		}
		if len(e.Message) > 64<<10 {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
	})
}

func TestStatusCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		want   string
	}{
		{"400", 400, CodeInvalidArgument},
		{"401", 401, CodeUnauthorized},
		{"403", 403, CodeForbidden},
		{"404", 404, CodeNotFound},
		{"409", 409, CodeConflict},
		{"410", 410, CodeExpired},
		{"413", 413, CodeTooLarge},
		{"429", 429, CodeBudgetExceeded},
		{"503", 503, CodeUnavailable},
		{"no code of its own", 502, ""},
		{"success", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := statusCode(tt.status); got != tt.want {
				t.Fatalf("statusCode(%d) = %q, want %q", tt.status, got, tt.want)
			}
		})
	}
}
