package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTenantName bounds a tenant name, which is logged and handed to policy plugins.
const maxTenantName = 128

// ParseTokens parses the contents of a --tokens file: a JSON object mapping each token
// to a tenant name, or to {"tenant": NAME, "admin": true} for an operator token that
// sees every sandbox and may change cluster membership:
//
//	{"tok-acme": "acme", "tok-ops": {"tenant": "ops", "admin": true}}
//
// It is strict, so that a typo cannot quietly grant or drop access: the file must be
// one object with at least one token; a token is non-empty and has no white space or
// control characters (it could never be sent in a header); a token given twice, an
// unknown or miscased field, a missing or empty tenant, a tenant name over 128 bytes
// or with control characters, an admin that is not a boolean, and trailing data are
// all errors.
func ParseTokens(data []byte) (map[string]Principal, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	out := map[string]Principal{}
	err := eachField(dec, "the tokens file", func(tok string) error {
		if err := checkTokenText(tok); err != nil {
			return err
		}
		if _, dup := out[tok]; dup {
			return fmt.Errorf("token %s is given twice", redactToken(tok))
		}
		p, err := parsePrincipal(dec, tok)
		if err != nil {
			return err
		}
		out[tok] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if len(out) == 0 {
		return nil, errors.New(`no tokens: want {"token": "tenant", "token2": {"tenant": "ops", "admin": true}}`)
	}
	return out, nil
}

// parsePrincipal reads the value of token tok's entry: a tenant name, or an object with
// "tenant" and optionally "admin".
func parsePrincipal(dec *json.Decoder, tok string) (Principal, error) {
	at := "token " + redactToken(tok)
	t, err := dec.Token()
	if err != nil {
		return Principal{}, fmt.Errorf("%s: %w", at, err)
	}
	switch v := t.(type) {
	case string:
		return Principal{Tenant: v}, checkTenantName(at, v)
	case json.Delim:
		if v != '{' {
			break
		}
		var p Principal
		seenTenant, seen := false, map[string]bool{}
		err := eachFieldIn(dec, at, func(key string) error {
			if seen[key] {
				return fmt.Errorf("%s: field %q is given twice", at, key)
			}
			seen[key] = true
			switch key {
			case "tenant":
				seenTenant = true
				return decodeField(dec, at, key, "string", &p.Tenant)
			case "admin":
				return decodeField(dec, at, key, "boolean", &p.Admin)
			}
			return fmt.Errorf("%s: unknown field %q (want \"tenant\" and \"admin\")", at, key)
		})
		if err != nil {
			return Principal{}, err
		}
		if !seenTenant {
			return Principal{}, fmt.Errorf("%s: \"tenant\" is required", at)
		}
		return p, checkTenantName(at, p.Tenant)
	}
	return Principal{}, fmt.Errorf("%s: want a tenant name or {\"tenant\": NAME, \"admin\": true}", at)
}

// eachField reads one JSON object from dec and calls fn with each key, leaving dec at
// the key's value, which fn must consume. fn checks for keys given twice.
func eachField(dec *json.Decoder, what string, fn func(key string) error) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%s must be a JSON object", what)
	}
	return eachFieldIn(dec, what, fn)
}

// eachFieldIn is eachField after the object's '{' has been read.
func eachFieldIn(dec *json.Decoder, what string, fn func(key string) error) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		key, _ := t.(string)
		if err := fn(key); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// decodeField decodes the value of field key into v, a pointer to a value of JSON type
// want (null is not one).
func decodeField(dec *json.Decoder, at, key, want string, v any) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if err := json.Unmarshal(raw, v); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("%s: %q must be a %s, not %s", at, key, want, raw)
	}
	return nil
}

func checkTokenText(tok string) error {
	if tok == "" {
		return errors.New("a token is empty")
	}
	if !utf8.ValidString(tok) || strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("token %s has white space or control characters", redactToken(tok))
	}
	return nil
}

func checkTenantName(at, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: the tenant name is empty", at)
	case len(name) > maxTenantName:
		return fmt.Errorf("%s: the tenant name is over %d bytes", at, maxTenantName)
	case !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%s: the tenant name %q has control characters or is not UTF-8", at, name)
	}
	return nil
}

// redactToken names a token in an error by its first characters only: a start-up
// error may end up in logs that others read.
func redactToken(tok string) string {
	r := []rune(tok)
	if len(r) > 4 {
		r = r[:4]
	}
	return fmt.Sprintf("%q… (%d bytes)", string(r), len(tok))
}
