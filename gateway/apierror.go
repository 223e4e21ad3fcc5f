package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Error codes of the API contract.
const (
	codeInvalidArgument = "invalid_argument"
	codeUnauthorized    = "unauthorized"
	codeForbidden       = "forbidden"
	codeNotFound        = "not_found"
	codeConflict        = "conflict"
	codeExpired         = "expired"
	codeTooLarge        = "too_large"
	codeBudgetExceeded  = "budget_exceeded"
	codeUnavailable     = "unavailable"
	codeInternal        = "internal"
)

// apiError is an error the gateway answers with: an HTTP status, a contract code and a
// human message, and Retry-After when it applies. Handlers return it (or any error,
// which toAPIError maps) and writeError renders it.
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, codeInvalidArgument, format, args...)
}

func notFound(format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, codeNotFound, format, args...)
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

// errorJSON is the contract's error object, in an error body and wherever a reply
// carries one beside its result (a session command's snapshot_error).
type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeAPIError writes e in the contract's error shape.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	setRetryAfter(w, e)
	var body errorBody
	body.Error.Code = e.Code
	body.Error.Message = e.Message
	writeJSON(w, e.Status, body)
}

// setRetryAfter sets the Retry-After header of e, if it has one. A 503 always has
// one, a second unless e says otherwise: every unavailable answer is worth a retry,
// and clients are promised the header to pace it.
func setRetryAfter(w http.ResponseWriter, e *apiError) {
	after := e.RetryAfter
	if after <= 0 && e.Status == http.StatusServiceUnavailable {
		after = time.Second
	}
	if after > 0 {
		secs := int((after + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
}

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"failed to encode response"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
