package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

type decodeTarget struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env"`
	N       *int              `json:"n"`
}

var decodeTests = []struct {
	name   string
	body   string
	status int // 0 = accepted
}{
	{"valid", `{"command":"ls","env":{"A":"1"},"n":3}`, 0},
	{"empty body is empty object", ``, 0},
	{"whitespace body", " \n ", 0},
	{"null fields", `{"command":null}`, 0},
	{"unknown field", `{"comand":"ls"}`, http.StatusBadRequest},
	{"wrong type", `{"command":1}`, http.StatusBadRequest},
	{"wrong nested type", `{"env":{"A":1}}`, http.StatusBadRequest},
	{"trailing data", `{"command":"ls"} {}`, http.StatusBadRequest},
	{"trailing garbage", `{"command":"ls"}x`, http.StatusBadRequest},
	{"truncated", `{"command":"ls"`, http.StatusBadRequest},
	{"not an object", `[1,2]`, http.StatusBadRequest},
	{"syntax error", `{command:"ls"}`, http.StatusBadRequest},
	{"too large", `{"command":"` + strings.Repeat("a", 2048) + `"}`, http.StatusRequestEntityTooLarge},
	{"field name in another case", `{"Command":"ls"}`, http.StatusBadRequest},
	{"field given twice", `{"command":"ls","command":"rm"}`, http.StatusBadRequest},
	{"map keys in any case", `{"env":{"a":"1","A":"2"}}`, 0},
	{"map key given twice", `{"env":{"a":"1","a":"2"}}`, http.StatusBadRequest},
	{"unicode-folded field name", `{"\u0043ommand":"ls"}`, http.StatusBadRequest},
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			var v decodeTarget
			err := decodeJSON(r, 1024, &v)
			switch {
			case tt.status == 0 && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.status != 0 && err == nil:
				t.Fatalf("accepted %q", tt.body)
			case tt.status != 0 && err.Status != tt.status:
				t.Fatalf("status %d (%v), want %d", err.Status, err, tt.status)
			}
		})
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v decodeTarget
		if err := decodeJSONBytes(body, &v); err != nil {
			if err.Status != http.StatusBadRequest || err.Code != codeInvalidArgument || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
		}
	})
}

// TestDecodeErrorNamesJSONFields: a type error names the field as the client wrote it,
// not through the Go structs that decode it (exec's fields live in an embedded struct).
func TestDecodeErrorNamesJSONFields(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{`{"command":"pwd","timeout_ms":1.5}`, `field "timeout_ms" must be an integer, not number`},
		{`{"command":["ls"]}`, `field "command" must be a string, not array`},
		{`{"command":"ls","env":{"A":1}}`, `field "env" must be a string, not number`},
		{`{"command":"ls","Timeout_Ms":100}`, `unknown field "Timeout_Ms"`},
		// An integer the field cannot hold is no type error: the message gives the range.
		{`{"command":"pwd","timeout_ms":99999999999999999999}`, `field "timeout_ms" must be an integer from -9223372036854775808 to 9223372036854775807, not 99999999999999999999`},
	}
	for _, tt := range tests {
		var v execRequest
		err := decodeJSONBytes([]byte(tt.body), &v)
		if err == nil || !strings.Contains(err.Message, tt.want) {
			t.Errorf("%s: %v, want it to say %s", tt.body, err, tt.want)
		}
	}
	var r resizeRequest
	const big = `{"cols":100000,"rows":24}`
	if err := decodeJSONBytes([]byte(big), &r); err == nil || !strings.Contains(err.Message, `field "cols" must be an integer from 0 to 65535, not 100000`) {
		t.Errorf("%s: %v, want it to give the range", big, err)
	}
	// A field whose type decodes itself (pty: true, false or a size) checks its own keys.
	var p createProcessRequest
	const body = `{"command":"ls","pty":{"Cols":80,"rows":24}}`
	if err := decodeJSONBytes([]byte(body), &p); err == nil || !strings.Contains(err.Message, `unknown field "Cols"`) {
		t.Errorf("%s: %v, want it to name Cols", body, err)
	}
}

// TestJSONFieldsCached: a struct type's JSON fields are worked out once, not on every
// request body that decodes into it. Not parallel: AllocsPerRun refuses that.
func TestJSONFieldsCached(t *testing.T) {
	typ := reflect.TypeFor[execRequest]()
	want := jsonFields(typ)
	if _, ok := want["timeout_ms"]; !ok {
		t.Fatalf("fields of execRequest %v lack timeout_ms", want)
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = jsonFields(typ) }); allocs != 0 {
		t.Fatalf("jsonFields allocated %.0f times for a type it has seen, want 0", allocs)
	}
}

// BenchmarkDecodeExec decodes an exec request body, as every POST /exec does: the way
// the handler does (decodeExecFast for such a body) and encoding/json's strict way.
func BenchmarkDecodeExec(b *testing.B) {
	body := []byte(`{"argv":["true"],"env":{"A":"1"},"timeout_ms":5000}`)
	for _, bb := range []struct {
		name   string
		decode func([]byte, any) error
	}{
		{"handler", func(body []byte, v any) error {
			if err := decodeJSONBytes(body, v); err != nil {
				return err
			}
			return nil
		}},
		{"strict", decodeStrict},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v execRequest
				if err := bb.decode(body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadWhole: a body is read whole whatever its declared length says (none, its
// own, less or more than it has), and one over the limit is a *http.MaxBytesError.
func TestReadWhole(t *testing.T) {
	t.Parallel()
	const limit = 64
	tests := []struct {
		name     string
		body     string
		declared int64 // Content-Length; -1: not declared
		tooLarge bool
	}{
		{"declared", `{"argv":["true"]}`, 17, false},
		{"empty", ``, 0, false},
		{"not declared", `{"argv":["true"]}`, -1, false},
		{"declared longer than sent", `{"argv"`, 17, false},
		{"declared shorter than sent", `{"argv":["true"]}`, 4, false},
		{"at the limit", strings.Repeat("a", limit), limit, false},
		{"declared over the limit", strings.Repeat("a", limit+1), limit + 1, true},
		{"sent over the limit", strings.Repeat("a", limit+1), 4, true},
		{"not declared, over the limit", strings.Repeat("a", limit+1), -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			r.ContentLength = tt.declared
			got, err := readWhole(r, limit)
			var tooBig *http.MaxBytesError
			switch {
			case tt.tooLarge && !errors.As(err, &tooBig):
				t.Fatalf("err = %v, want a MaxBytesError", err)
			case !tt.tooLarge && (err != nil || string(got) != tt.body):
				t.Fatalf("got %q, %v; want %q", got, err, tt.body)
			}
		})
	}
}

// TestReadWholeAllocs: a declared body is read with one allocation, its own buffer.
func TestReadWholeAllocs(t *testing.T) {
	const body = `{"argv":["true"]}`
	src := strings.NewReader(body)
	r := httptest.NewRequest("POST", "/", src)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(body)
		if b, err := readWhole(r, maxJSONBody); err != nil || string(b) != body {
			t.Fatalf("got %q, %v", b, err)
		}
	})
	if allocs != 1 {
		t.Errorf("%v allocations per body, want 1", allocs)
	}
}
