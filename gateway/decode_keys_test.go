package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// keysEmbedded is promoted into keysTarget, as commandFields is into execRequest.
type keysEmbedded struct {
	E string `json:"e"`
}

// keysTarget has each shape checkKeys walks: nested structs, slices, maps, pointers,
// an interface and a type that decodes itself.
type keysTarget struct {
	keysEmbedded
	A []struct {
		B int              `json:"b"`
		C map[string][]int `json:"c"`
	} `json:"a"`
	M map[string]struct {
		X string `json:"x"`
	} `json:"m"`
	I any         `json:"i"`
	P *keysTarget `json:"p"`
	U ptyRequest  `json:"u"`
	S string      `json:"s"`
}

// keysTypes are the types the key walk is compared on.
var keysTypes = []reflect.Type{
	reflect.TypeFor[keysTarget](), reflect.TypeFor[execRequest](),
	reflect.TypeFor[createProcessRequest](), reflect.TypeFor[decodeTarget](),
}

var keysTests = []struct {
	name string
	body string
	want string // "" = accepted; else the error checkKeys gives
}{
	{"empty object", `{}`, ""},
	{"fields", `{"e":"x","s":"y","i":{"Any":[1,{"Q":2}]},"u":{"Cols":1}}`, ""},
	{"nested", `{"a":[{"b":1,"c":{"k":[1,2]}},{"b":2}],"m":{"k":{"x":"1"}},"p":{"s":"z"}}`, ""},
	{"whitespace", " \t\n{ \"s\" : \"y\" , \"a\" : [ { \"b\" : 1 } ] } \r\n", ""},
	{"scalars", `{"s":null,"e":"a\"b\\","i":true,"p":null,"a":[],"m":{}}`, ""},
	{"miscased field", `{"S":"y"}`, `unknown field "S" (field names are case-sensitive)`},
	{"miscased nested", `{"a":[{"B":1}]}`, `unknown field "a.B" (field names are case-sensitive)`},
	{"miscased in map value", `{"m":{"k":{"X":"1"}}}`, `unknown field "m.k.X" (field names are case-sensitive)`},
	{"miscased under pointer", `{"p":{"p":{"E":"1"}}}`, `unknown field "p.p.E" (field names are case-sensitive)`},
	{"twice", `{"s":"a","s":"b"}`, `field "s" is given twice`},
	{"twice in map", `{"m":{"k":{},"k":{}}}`, `field "m.k" is given twice`},
	{"twice escaped", `{"s":"a","\u0073":"b"}`, `field "s" is given twice`},
	{"escaped miscase", `{"\u0053":"a"}`, `unknown field "S" (field names are case-sensitive)`},
	{"map key past the short list twice", `{"m":{` + manyKeys(40) + `,"k7":{}}}`, `field "m.k7" is given twice`},
	{"many map keys", `{"m":{` + manyKeys(40) + `}}`, ""},
	{"not utf-8 keys folded alike", "{\"m\":{\"\xff\":{},\"\xfe\":{}}}", "field \"m.\ufffd\" is given twice"},
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{}`, i)
	}
	return b.String()
}

// TestCheckKeys: the byte walk gives the answers the token walk it replaced gave.
func TestCheckKeys(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[keysTarget]()
	for _, tt := range keysTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, want := errText(checkKeys([]byte(tt.body), typ)), errText(checkKeysTokens([]byte(tt.body), typ))
			if got != tt.want || want != tt.want {
				t.Fatalf("checkKeys %q, token walk %q, want %q", got, want, tt.want)
			}
		})
	}
}

// TestCheckKeysAllocs: checking an exec body's keys allocates nothing but the path of
// its one nested value (argv); the token walk allocated for every token.
func TestCheckKeysAllocs(t *testing.T) {
	body := []byte(`{"argv":["true"],"env":{"A":"1"},"timeout_ms":5000}`)
	typ := reflect.TypeFor[execRequest]()
	if allocs := testing.AllocsPerRun(100, func() {
		if err := checkKeys(body, typ); err != nil {
			t.Fatal(err)
		}
	}); allocs > 2 {
		t.Fatalf("checkKeys allocated %.0f times per exec body, want at most 2", allocs)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzCheckKeys: on any valid JSON, the byte walk agrees with the token walk.
func FuzzCheckKeys(f *testing.F) {
	for _, tt := range keysTests {
		f.Add([]byte(tt.body))
	}
	for _, tt := range decodeTests {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			_ = checkKeys(body, keysTypes[0]) // must not panic or loop
			return
		}
		for _, typ := range keysTypes {
			got, want := errText(checkKeys(body, typ)), errText(checkKeysTokens(body, typ))
			if got != want {
				t.Fatalf("%s: checkKeys %q, token walk %q", typ, got, want)
			}
		}
	})
}

// checkKeysTokens walks the JSON value in data alongside the Go type it decoded into and
// refuses what encoding/json lets through: an object key that names a field only
// when case is folded ("ID" for "id"), and a key given twice in one object. The
// contract rejects unknown fields so that typos are caught; a miscased key is one.
// Types with their own UnmarshalJSON check their own part.
func checkKeysTokens(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return walkKeysTokens(dec, tok, t, "")
}

// walkKeysTokens checks the value that starts with tok, to be decoded into t; at names the
// value in messages.
func walkKeysTokens(dec *json.Decoder, tok json.Token, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
		return skipTokens(dec, delim)
	}
	if delim == '[' {
		var elem reflect.Type
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			elem = t.Elem()
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			if err := walkKeysTokens(dec, tok, elem, at); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	var fields map[string]reflect.Type
	switch t.Kind() {
	case reflect.Struct:
		fields = jsonFields(t)
	case reflect.Map:
	default:
		return skipTokens(dec, delim)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		path := strings.TrimPrefix(at+"."+key, ".")
		if seen[key] {
			return fmt.Errorf("field %q is given twice", path)
		}
		seen[key] = true
		vt := t
		if t.Kind() == reflect.Map {
			vt = t.Elem()
		} else if vt, ok = fields[key]; !ok {
			return fmt.Errorf("unknown field %q (field names are case-sensitive)", path)
		}
		if tok, err = dec.Token(); err != nil {
			return err
		}
		if err := walkKeysTokens(dec, tok, vt, path); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// skipTokens consumes the rest of the object or array that opened with delim.
func skipTokens(dec *json.Decoder, delim json.Delim) error {
	if delim != '{' && delim != '[' {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}
