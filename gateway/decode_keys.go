package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkKeys walks the JSON value in data alongside the Go type it decoded into and
// refuses what encoding/json lets through: an object key that names a field only
// when case is folded ("ID" for "id"), and a key given twice in one object. The
// contract rejects unknown fields so that typos are caught; a miscased key is one.
// Types with their own UnmarshalJSON check their own part.
//
// data is a value encoding/json has just decoded, so it is valid JSON: the walk reads
// its bytes directly instead of through json.Decoder's tokens, which allocated for
// every key and value and cost ~8 µs of an exec's ~230 µs of server CPU under 8
// clients (BENCHMARKS.md, "#14, fourth pass"). Anything unexpected still ends the
// walk with an error rather than a panic.
func checkKeys(data []byte, t reflect.Type) error {
	w := keyWalk{data: data}
	w.space()
	return w.value(t, "")
}

// errNotJSON ends a walk over bytes that are not the valid JSON checkKeys expects.
var errNotJSON = errors.New("invalid JSON")

// keyWalk is checkKeys' position in data.
type keyWalk struct {
	data []byte
	i    int
}

// space skips JSON whitespace.
func (w *keyWalk) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// expect consumes c, after whitespace.
func (w *keyWalk) expect(c byte) error {
	w.space()
	if w.i >= len(w.data) || w.data[w.i] != c {
		return errNotJSON
	}
	w.i++
	return nil
}

// value checks the value at the walk's position, to be decoded into t; at names the
// value in messages.
func (w *keyWalk) value(t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	w.space()
	if w.i >= len(w.data) {
		return errNotJSON
	}
	c := w.data[w.i]
	if c != '{' && c != '[' {
		return w.skip()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
		return w.skip()
	}
	if c == '[' {
		var elem reflect.Type
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			elem = t.Elem()
		}
		return w.array(elem, at)
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.object(t, jsonFields(t), at)
	case reflect.Map:
		return w.object(t, nil, at)
	}
	return w.skip()
}

// array checks each element of the array at the walk's position.
func (w *keyWalk) array(elem reflect.Type, at string) error {
	w.i++ // '['
	if w.space(); w.i < len(w.data) && w.data[w.i] == ']' {
		w.i++
		return nil
	}
	for {
		if err := w.value(elem, at); err != nil {
			return err
		}
		if end, err := w.separator(']'); end || err != nil {
			return err
		}
	}
}

// object checks the keys of the object at the walk's position: of struct t, whose
// JSON fields are fields, or of a map (fields nil) whose keys may be anything once.
func (w *keyWalk) object(t reflect.Type, fields map[string]reflect.Type, at string) error {
	w.i++ // '{'
	if w.space(); w.i < len(w.data) && w.data[w.i] == '}' {
		w.i++
		return nil
	}
	var keys seenKeys
	for {
		key, err := w.key()
		if err != nil {
			return err
		}
		if keys.add(key) {
			return fmt.Errorf("field %q is given twice", strings.TrimPrefix(at+"."+string(key), "."))
		}
		vt := t
		if fields == nil {
			vt = t.Elem()
		} else if vt = fields[string(key)]; vt == nil {
			return fmt.Errorf("unknown field %q (field names are case-sensitive)", strings.TrimPrefix(at+"."+string(key), "."))
		}
		if err := w.expect(':'); err != nil {
			return err
		}
		path := at
		if w.space(); w.i < len(w.data) && (w.data[w.i] == '{' || w.data[w.i] == '[') {
			path = strings.TrimPrefix(at+"."+string(key), ".") // only a nested value names it
		}
		if err := w.value(vt, path); err != nil {
			return err
		}
		if end, err := w.separator('}'); end || err != nil {
			return err
		}
	}
}

// separator reads what follows an element of an array or object: a comma (more
// follow) or its closing byte (end).
func (w *keyWalk) separator(closing byte) (end bool, err error) {
	if w.space(); w.i >= len(w.data) {
		return false, errNotJSON
	}
	w.i++
	switch w.data[w.i-1] {
	case ',':
		return false, nil
	case closing:
		return true, nil
	}
	return false, errNotJSON
}

// key reads an object key, unescaped as encoding/json reads it (a key with escapes or
// bytes outside ASCII, rare, goes through encoding/json itself).
func (w *keyWalk) key() ([]byte, error) {
	w.space()
	start := w.i
	if err := w.skipString(); err != nil {
		return nil, err
	}
	raw := w.data[start:w.i]
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		}
	}
	return raw[1 : len(raw)-1], nil
}

// skipString moves past the string that starts at the walk's position.
func (w *keyWalk) skipString() error {
	if w.i >= len(w.data) || w.data[w.i] != '"' {
		return errNotJSON
	}
	for w.i++; w.i < len(w.data); w.i++ {
		switch w.data[w.i] {
		case '\\':
			w.i++
		case '"':
			w.i++
			return nil
		}
	}
	return errNotJSON
}

// skip moves past the value at the walk's position, nested values and all.
func (w *keyWalk) skip() error {
	if w.i >= len(w.data) {
		return errNotJSON
	}
	switch w.data[w.i] {
	case '"':
		return w.skipString()
	case '{', '[':
		for depth := 0; w.i < len(w.data); {
			switch w.data[w.i] {
			case '"':
				if err := w.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					w.i++
					return nil
				}
			}
			w.i++
		}
		return errNotJSON
	}
	start := w.i // a number, true, false or null: up to what follows it
	for w.i < len(w.data) && !endsScalar(w.data[w.i]) {
		w.i++
	}
	if w.i == start {
		return errNotJSON
	}
	return nil
}

// endsScalar reports whether c may follow a number, true, false or null.
func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
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

// seenKeys is the set of an object's keys so far: a short list in place, as most
// objects are small, and a map past that, so that a large map is not checked in
// quadratic time.
type seenKeys struct {
	list [8][]byte
	n    int
	set  map[string]struct{}
}

// add records key and reports whether it was already there.
func (s *seenKeys) add(key []byte) bool {
	if s.set == nil {
		for _, k := range s.list[:s.n] {
			if bytes.Equal(k, key) {
				return true
			}
		}
		if s.n < len(s.list) {
			s.list[s.n] = key
			s.n++
			return false
		}
		s.set = make(map[string]struct{}, 4*len(s.list))
		for _, k := range s.list {
			s.set[string(k)] = struct{}{}
		}
	}
	if _, ok := s.set[string(key)]; ok {
		return true
	}
	s.set[string(key)] = struct{}{}
	return false
}
