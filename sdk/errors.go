package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The stable error codes of the contract.
const (
	CodeInvalidArgument = "invalid_argument"
	CodeUnauthorized    = "unauthorized"
	CodeForbidden       = "forbidden"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodeExpired         = "expired"
	CodeTooLarge        = "too_large"
	CodeBudgetExceeded  = "budget_exceeded"
	CodeUnavailable     = "unavailable"
)

// ErrAttachmentClosed is returned by an [Attachment]'s methods after Close.
var ErrAttachmentClosed = errors.New("sdk: attachment closed")

// errSSETooLarge is returned when a server-sent event exceeds maxSSEEvent.
var errSSETooLarge = errors.New("sdk: server-sent event too large")

// Error is a request the gateway answered with an error status. It is returned as
// *Error; use [errors.As] or the helpers below.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the contract's stable machine code, such as "not_found". When the body is
	// not the contract's error shape (a proxy in between, say), it is derived from Status.
	Code string
	// Message is the human-readable message.
	Message string
	// RetryAfter is the server's Retry-After, zero when absent.
	RetryAfter time.Duration
}

// Error formats the code, message and status.
func (e *Error) Error() string {
	return fmt.Sprintf("sandgate: %s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// ErrorCode returns the contract code of err if it is or wraps an *Error, else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNotFound reports whether err is a not_found error.
func IsNotFound(err error) bool { return ErrorCode(err) == CodeNotFound }

// IsConflict reports whether err is a conflict error.
func IsConflict(err error) bool { return ErrorCode(err) == CodeConflict }

// IsUnauthorized reports whether err is an unauthorized error.
func IsUnauthorized(err error) bool { return ErrorCode(err) == CodeUnauthorized }

// IsInvalidArgument reports whether err is an invalid_argument error.
func IsInvalidArgument(err error) bool { return ErrorCode(err) == CodeInvalidArgument }

// IsUnavailable reports whether err is an unavailable error (retry after a while).
func IsUnavailable(err error) bool { return ErrorCode(err) == CodeUnavailable }

// statusCode is the contract code used for a status when a body has none, or "". A
// switch, not a map: a map literal is built at package initialisation, in every
// process of every program that links the SDK.
func statusCode(status int) string {
	switch status {
	case 400:
		return CodeInvalidArgument
	case 401:
		return CodeUnauthorized
	case 403:
		return CodeForbidden
	case 404:
		return CodeNotFound
	case 409:
		return CodeConflict
	case 410:
		return CodeExpired
	case 413:
		return CodeTooLarge
	case 429:
		return CodeBudgetExceeded
	case 503:
		return CodeUnavailable
	}
	return ""
}

// decodeError reads an error response into an *Error.
func decodeError(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := parseError(resp.StatusCode, body)
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// parseError decodes the contract's error shape, falling back to the status.
func parseError(status int, body []byte) *Error {
	e := &Error{Status: status}
	var shape struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &shape) == nil && shape.Error.Code != "" {
		e.Code, e.Message = shape.Error.Code, shape.Error.Message
		if e.Message == "" { // the contract's errors have one; say at least the status
			e.Message = http.StatusText(status)
		}
		return e
	}
	e.Code = statusCode(status)
	if e.Code == "" {
		e.Code = "http_" + strconv.Itoa(status)
	}
	e.Message = strings.TrimSpace(string(body))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "…"
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
