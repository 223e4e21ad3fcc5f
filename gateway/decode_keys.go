package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkKeys walks the JSON value in data alongside the Go type it decoded into and
// refuses what encoding/json lets through: an object key that names a field only
// when case is folded ("ID" for "id"), and a key given twice in one object. The
// contract rejects unknown fields so that typos are caught; a miscased key is one.
// Types with their own UnmarshalJSON check their own part.
func checkKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return walkKeys(dec, tok, t, "")
}

// walkKeys checks the value that starts with tok, to be decoded into t; at names the
// value in messages.
func walkKeys(dec *json.Decoder, tok json.Token, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
		return skipValue(dec, delim)
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
			if err := walkKeys(dec, tok, elem, at); err != nil {
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
		return skipValue(dec, delim)
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
		if err := walkKeys(dec, tok, vt, path); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// fieldsCache holds jsonFields' answer per struct type (reflect.Type keys, read-only
// maps as values): working it out on every request body cost ~7 µs of an exec's CPU.
var fieldsCache sync.Map

// jsonFields maps the JSON names of struct t's fields (its own and promoted ones) to
// their types. The map is shared: callers only read it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldsCache.LoadOrStore(t, structFields(t))
	return m.(map[string]reflect.Type)
}

// structFields works out jsonFields' answer.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			continue // its fields are promoted, and listed too
		case tag == "":
			tag = f.Name
		}
		if _, taken := out[tag]; !taken { // the shallower field wins, as in encoding/json
			out[tag] = f.Type
		}
	}
	return out
}

// skipValue consumes the rest of the object or array that opened with delim.
func skipValue(dec *json.Decoder, delim json.Delim) error {
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
