package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// DecodeParams decodes a params object into v (a pointer to a params struct)
// strictly: every object in raw may hold a key once, keys that differ only in
// case are refused, and a key that matches a field of v only case-insensitively
// is refused (encoding/json would silently accept it). Unknown keys are
// allowed, so a newer host can talk to an older resident, except in a type
// that refuses them (closedKeys: the sandbox spec). Absent or null params
// decode as the zero value.
func DecodeParams(raw []byte, v any) error { return decodeParams(raw, v, false) }

// DecodeValidParams is DecodeParams for raw already known to be valid JSON
// (the params of a body ParseEnvelope accepted, which json.Valid checked
// whole): it skips checking that again, a pass over every byte of a frame
// that carries megabytes of data.
func DecodeValidParams(raw []byte, v any) error { return decodeParams(raw, v, true) }

func decodeParams(raw []byte, v any, valid bool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return Errorf(KindInvalidRequest, "params must be a JSON object")
	}
	if err := checkKeysOf(raw, reflect.TypeOf(v), valid); err != nil {
		return &Error{Kind: KindInvalidRequest, Msg: "params: " + err.Error()}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Kind: KindInvalidRequest, Msg: "params: " + describeJSONError(err)}
	}
	return nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	return err.Error()
}

// checkKeys walks raw, checking each object against the struct type it will
// decode into (nil type: a map or free-form value, which only gets the
// duplicate check). It scans the bytes itself: json.Decoder.Token allocates
// for every token, which made this walk most of the resident's own cost of a
// request. Text that is not valid JSON is left to json.Unmarshal to report.
func checkKeys(raw []byte, t reflect.Type) error { return checkKeysOf(raw, t, false) }

// checkKeysOf is checkKeys; valid says raw is known to be valid JSON.
func checkKeysOf(raw []byte, t reflect.Type, valid bool) error {
	if !valid && !json.Valid(raw) {
		return nil
	}
	k := keyScanner{data: raw}
	return k.value(t)
}

// keyScanner walks JSON text that json.Valid accepted; it never needs to
// handle a syntax error.
type keyScanner struct {
	data []byte
	pos  int
	// skipOnly walks without checking keys (the text was checked before).
	skipOnly bool
}

func (k *keyScanner) space() {
	for k.pos < len(k.data) {
		switch k.data[k.pos] {
		case ' ', '\t', '\n', '\r':
			k.pos++
		default:
			return
		}
	}
}

func (k *keyScanner) value(t reflect.Type) error {
	k.space()
	if k.pos >= len(k.data) {
		return errors.New("unexpected end of JSON")
	}
	switch k.data[k.pos] {
	case '{':
		return k.object(deref(t))
	case '[':
		return k.array(deref(t))
	case '"':
		_, err := k.skipStr()
		return err
	}
	// A number, true, false or null: up to the next delimiter.
	for k.pos < len(k.data) {
		switch k.data[k.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		k.pos++
	}
	return nil
}

func (k *keyScanner) array(t reflect.Type) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	k.pos++ // [
	k.space()
	if k.pos < len(k.data) && k.data[k.pos] == ']' {
		k.pos++
		return nil
	}
	for {
		if err := k.value(elem); err != nil {
			return err
		}
		if done, err := k.next(']'); done || err != nil {
			return err
		}
	}
}

// next consumes the ',' between members or the closing delimiter; done
// reports the closing one.
func (k *keyScanner) next(closing byte) (done bool, err error) {
	k.space()
	if k.pos >= len(k.data) {
		return false, errors.New("unexpected end of JSON")
	}
	c := k.data[k.pos]
	k.pos++
	switch c {
	case ',':
		return false, nil
	case closing:
		return true, nil
	}
	return false, fmt.Errorf("unexpected %q in JSON", c)
}

func (k *keyScanner) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var mapElem reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	} else if t != nil && t.Kind() == reflect.Map {
		mapElem = t.Elem()
	}
	k.pos++ // {
	k.space()
	if k.pos < len(k.data) && k.data[k.pos] == '}' {
		k.pos++
		return nil
	}
	seen := map[string]string{}
	for {
		k.space()
		if k.skipOnly {
			if err := k.skipMember(); err != nil {
				return err
			}
			if done, err := k.next('}'); done || err != nil {
				return err
			}
			continue
		}
		key, err := k.str()
		if err != nil {
			return err
		}
		k.space()
		if k.pos >= len(k.data) || k.data[k.pos] != ':' {
			return errors.New("missing ':' in JSON object")
		}
		k.pos++
		// Struct fields match case-insensitively in encoding/json, so
		// there a case variant is a duplicate; map keys (env names, tags)
		// are case-sensitive and only exact repeats are.
		seenKey := key
		if fields != nil {
			seenKey = strings.ToLower(key)
		}
		if prev, dup := seen[seenKey]; dup {
			if prev == key {
				return fmt.Errorf("key %q appears twice", key)
			}
			return fmt.Errorf("keys %q and %q differ only in case", prev, key)
		}
		seen[seenKey] = key
		var next reflect.Type = mapElem
		if fields != nil {
			ft, exact := fields[key]
			if !exact {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("key %q must be spelled %q", key, name)
					}
				}
				if closed, ok := reflect.Zero(t).Interface().(closedKeys); ok {
					return fmt.Errorf("%s has no key %q (known: %s)", closed.keysOf(), decodedKey(key), strings.Join(sortedKeys(fields), ", "))
				}
			}
			next = ft
		}
		if err := k.value(next); err != nil {
			return err
		}
		if done, err := k.next('}'); done || err != nil {
			return err
		}
	}
}

// skipMember moves past one "key": value member.
func (k *keyScanner) skipMember() error {
	if _, err := k.skipStr(); err != nil {
		return err
	}
	k.space()
	if k.pos >= len(k.data) || k.data[k.pos] != ':' {
		return errors.New("missing ':' in JSON object")
	}
	k.pos++
	return k.value(nil)
}

// str reads a string at k.pos and returns its value. A string without
// escapes is its bytes; one with escapes ("\u0069d" is "id") is decoded by
// encoding/json, so a key is compared exactly as the decoder will see it.
func (k *keyScanner) str() (string, error) {
	start := k.pos
	escaped, err := k.skipStr()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(k.data[start+1 : k.pos-1]), nil
	}
	var s string
	if err := json.Unmarshal(k.data[start:k.pos], &s); err != nil {
		return "", err
	}
	return s, nil
}

// skipStr moves past a string at k.pos without making a copy of it: values
// are only skipped, and one of them can be most of a 16 MiB frame.
func (k *keyScanner) skipStr() (escaped bool, err error) {
	if k.pos >= len(k.data) || k.data[k.pos] != '"' {
		return false, errors.New("expected a JSON string")
	}
	for i := k.pos + 1; i < len(k.data); i++ {
		switch k.data[i] {
		case '\\':
			escaped = true
			i++ // the escaped byte (a \u's hex digits are plain bytes)
		case '"':
			k.pos = i + 1
			return escaped, nil
		}
	}
	return false, errors.New("unexpected end of JSON")
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields maps each JSON key of t to its field type.
func structFields(t reflect.Type) map[string]reflect.Type {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}
