package gateway

import (
	"reflect"
	"testing"
)

// execFastTests are exec bodies and whether decodeExecFast takes them (else
// decodeStrict decides, with the contract's errors).
var execFastTests = []struct {
	name string
	body string
	fast bool
}{
	{"argv", `{"argv":["true"]}`, true},
	{"everything", ` { "argv" : ["sh", "-c", "echo hi"] , "cwd":"sub", "env":{"A":"1","B":""}, "timeout_ms":5000, "stdin":"in" } `, true},
	{"command", `{"command":"echo hi","timeout_ms":0}`, true},
	{"empty object", `{}`, true},
	{"empty argv", `{"argv":[]}`, true},
	{"empty env", `{"argv":["x"],"env":{}}`, true},
	{"negative timeout", `{"argv":["x"],"timeout_ms":-5}`, true},
	{"minus zero", `{"argv":["x"],"timeout_ms":-0}`, true},
	{"utf-8", `{"argv":["échø","日本"]}`, true},
	{"escape", `{"argv":["a\"b"]}`, false},
	{"unicode escape", `{"argv":["\u00e9"]}`, false},
	{"invalid utf-8", "{\"argv\":[\"\xff\"]}", false},
	{"control character", "{\"argv\":[\"a\tb\"]}", false},
	{"null argv", `{"argv":null}`, false},
	{"null command", `{"command":null}`, false},
	{"miscased key", `{"Argv":["true"]}`, false},
	{"unknown key", `{"argv":["true"],"x":1}`, false},
	{"duplicate key", `{"argv":["a"],"argv":["b"]}`, false},
	{"duplicate env key", `{"argv":["a"],"env":{"A":"1","A":"2"}}`, false},
	{"fraction", `{"argv":["a"],"timeout_ms":1.5}`, false},
	{"exponent", `{"argv":["a"],"timeout_ms":1e3}`, false},
	{"leading zero", `{"argv":["a"],"timeout_ms":01}`, false},
	{"too big", `{"argv":["a"],"timeout_ms":9223372036854775808}`, false},
	{"string timeout", `{"argv":["a"],"timeout_ms":"5"}`, false},
	{"number in argv", `{"argv":[1]}`, false},
	{"trailing comma", `{"argv":["a"],}`, false},
	{"trailing data", `{"argv":["a"]} x`, false},
	{"two values", `{"argv":["a"]}{}`, false},
	{"unterminated", `{"argv":["a"]`, false},
	{"array", `["a"]`, false},
}

// TestDecodeExecFast: the fast decoder takes the plain bodies, leaves the rest to
// decodeStrict, and decodes what it takes as decodeStrict does.
func TestDecodeExecFast(t *testing.T) {
	t.Parallel()
	for _, tt := range execFastTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got execRequest
			if ok := decodeExecFast([]byte(tt.body), &got); ok != tt.fast {
				t.Fatalf("decodeExecFast took it: %v, want %v", ok, tt.fast)
			}
			if tt.fast {
				compareExecDecoders(t, []byte(tt.body), got)
			} else if !reflect.DeepEqual(got, execRequest{}) {
				t.Fatalf("a body left to decodeStrict changed the request: %+v", got)
			}
		})
	}
}

// compareExecDecoders fails unless decodeStrict accepts body and decodes it to got.
func compareExecDecoders(t *testing.T, body []byte, got execRequest) {
	t.Helper()
	var want execRequest
	if err := decodeStrict(body, &want); err != nil {
		t.Fatalf("decodeExecFast took %q, which decodeStrict refuses: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeExecFast %+v, decodeStrict %+v", body, got, want)
	}
}

// FuzzDecodeExecFast: whatever the fast decoder takes, decodeStrict takes too, with
// the same result.
func FuzzDecodeExecFast(f *testing.F) {
	for _, tt := range execFastTests {
		f.Add([]byte(tt.body))
	}
	for _, tt := range decodeTests {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got execRequest
		if decodeExecFast(body, &got) {
			compareExecDecoders(t, body, got)
		}
	})
}

// TestDecodeExecFastUsed: an exec body goes through the fast decoder (a zero request
// only), and an unusual one still gets decodeStrict's error. Not parallel:
// AllocsPerRun refuses to run beside other tests.
func TestDecodeExecFastUsed(t *testing.T) {
	body := []byte(`{"argv":["true"]}`)
	allocs := func(decode func([]byte, any) error) float64 {
		return testing.AllocsPerRun(20, func() {
			var req execRequest
			if err := decode(body, &req); err != nil {
				t.Fatal(err)
			}
		})
	}
	fast := allocs(func(b []byte, v any) error {
		if err := decodeJSONBytes(b, v); err != nil {
			return err
		}
		return nil
	})
	strict := allocs(decodeStrict)
	if fast*2 > strict { // about 5 against 20
		t.Fatalf("%v allocations to decode an exec body, encoding/json's way %v: the fast decoder was not used", fast, strict)
	}
	var req execRequest
	if err := decodeJSONBytes([]byte(`{"argv":["a"],"Argv":["b"]}`), &req); err == nil {
		t.Fatal("a miscased key was accepted")
	}
}
