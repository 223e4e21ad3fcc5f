package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"

	"github.com/sandgate/sandgate/runtime"
)

// maxJSONBody is the default limit for JSON request bodies (1 MiB; docs/design.md, "Limits").
const maxJSONBody = 1 << 20

// decodeJSON reads r's body into v strictly: unknown fields, wrong types and trailing
// data are invalid_argument, a body over limit is too_large. An empty body decodes as
// {} so optional-body routes need no "{}".
func decodeJSON(r *http.Request, limit int64, v any) *apiError {
	body, err := readWhole(r, limit)
	if err != nil {
		return bodyError(err)
	}
	return decodeJSONBytes(body, v)
}

// readJSONBody reads a JSON request body up to limit, with decodeJSON's errors.
func readJSONBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := readWhole(r, limit)
	if err != nil {
		return nil, bodyError(err)
	}
	return body, nil
}

// bodyError is the API error for a body that could not be read.
func bodyError(err error) *apiError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "request body over the limit of %d bytes", tooBig.Limit)
	}
	var stalled *apiError // the body's read deadline passed (deadlineBody)
	if errors.As(err, &stalled) {
		return stalled
	}
	return badRequest("failed to read request body: %v", err)
}

// sizedBody is the largest declared body length readWhole reads into a buffer of that
// size; a longer one grows as io.ReadAll grows it.
const sizedBody = 64 << 10

// readWhole reads r's body to its end, at most limit bytes (a *http.MaxBytesError past
// it). A body whose length the client declared (Content-Length, which net/http holds
// it to) is read into a buffer of that size: io.ReadAll starts at 512 bytes, which was
// most of the garbage of an exec's 17-byte body, and MaxBytesReader one allocation
// more (BENCHMARKS.md, "#14, eighth pass").
func readWhole(r *http.Request, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > limit || n > sizedBody {
		return io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	}
	buf := make([]byte, 0, n+1) // +1: room for the read that finds the end
	for len(buf) < cap(buf) {
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	// More than declared (not from net/http): the limit decides, as for any body.
	return io.ReadAll(http.MaxBytesReader(nil, io.NopCloser(io.MultiReader(bytes.NewReader(buf), r.Body)), limit))
}

func decodeJSONBytes(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if req, ok := v.(*execRequest); ok && req.zero() && decodeExecFast(body, req) {
		return nil
	}
	if err := decodeStrict(body, v); err != nil {
		return badRequest("invalid JSON body: %v", err)
	}
	return nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and trailing
// data; its error says what is wrong in a client's terms.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(describeJSONError(err, reflect.TypeOf(v)))
	}
	// Only JSON whitespace may follow, as json.Decoder.Token would find (io.EOF).
	if rest := body[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return errors.New("trailing data after the JSON value")
	}
	return checkKeys(body, reflect.TypeOf(v))
}

func describeJSONError(err error, target reflect.Type) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if lo, hi, ok := intRange(typeErr.Type); ok && isIntegerLiteral(typeErr.Value) {
			// An integer, but one the field cannot hold: say which ones it can.
			return fmt.Sprintf("field %q must be an integer from %d to %d, not %s",
				jsonPath(target, typeErr.Field), lo, hi, strings.TrimPrefix(typeErr.Value, "number "))
		}
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", jsonPath(target, typeErr.Field), kindName(typeErr.Type), typeErr.Value)
		}
		return fmt.Sprintf("expected %s, not %s", kindName(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("syntax error at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return err.Error()
}

// jsonPath turns the field path of a decoding error into the client's terms: it drops
// the Go names of embedded structs, which encoding/json puts in the path though their
// fields are the object's own.
func jsonPath(t reflect.Type, field string) string {
	var out []string
	for _, seg := range strings.Split(field, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			out, t = append(out, seg), nil
			continue
		}
		if f, ok := t.FieldByName(seg); ok && f.Anonymous {
			t = f.Type
			continue
		}
		out, t = append(out, seg), jsonFields(t)[seg]
	}
	return strings.Join(out, ".")
}

// kindName says what JSON a Go type decodes from.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// optionalID checks a caller-chosen id: absent is "" (the server makes one), and a
// given one, even "", must be valid.
func optionalID(kind string, id *string) (string, error) {
	if id == nil {
		return "", nil
	}
	if !runtime.ValidID(*id) {
		return "", badRequest("invalid %s id %q: use 1-63 characters of [a-z0-9_-], starting with a letter or digit", kind, *id)
	}
	return *id, nil
}

// intRange returns the values an integer type can hold; ok is false for other types.
func intRange(t reflect.Type) (lo, hi int64, ok bool) {
	if t == nil {
		return 0, 0, false
	}
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return -1 << (t.Bits() - 1), 1<<(t.Bits()-1) - 1, true
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return 0, 1<<t.Bits() - 1, true
	case reflect.Int, reflect.Int64:
		return math.MinInt64, math.MaxInt64, true
	}
	return 0, 0, false // uint64's maximum is no int64; no request field is one
}

// isIntegerLiteral reports whether v, the value of a json.UnmarshalTypeError, is a
// JSON number without a fraction or exponent ("number 100000").
func isIntegerLiteral(v string) bool {
	n, ok := strings.CutPrefix(v, "number ")
	n = strings.TrimPrefix(n, "-")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}
