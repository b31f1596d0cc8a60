package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// DecodeParams decodes a params object into v (a pointer to a params struct)
// strictly: every object in raw may hold a key once, keys that differ only in
// case are refused, and a key that matches a field of v only case-insensitively
// is refused (encoding/json would silently accept it). Unknown keys are
// allowed, so a newer host can talk to an older resident. Absent or null
// params decode as the zero value.
func DecodeParams(raw []byte, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return Errorf(KindInvalidRequest, "params must be a JSON object")
	}
	if err := checkKeys(raw, reflect.TypeOf(v)); err != nil {
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

// checkKeys walks raw with a token decoder, checking each object against the
// struct type it will decode into (nil type: a map or free-form value, which
// only gets the duplicate check).
func checkKeys(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return walkValue(dec, t)
}

func walkValue(dec *json.Decoder, t reflect.Type) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return errors.New("unexpected end of JSON")
		}
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = deref(t)
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkValue(dec, elem); err != nil {
				return err
			}
		}
	case '{':
		if err := walkObject(dec, t); err != nil {
			return err
		}
	}
	_, err = dec.Token() // closing delimiter
	return err
}

func walkObject(dec *json.Decoder, t reflect.Type) error {
	var fields map[string]reflect.Type
	var mapElem reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	} else if t != nil && t.Kind() == reflect.Map {
		mapElem = t.Elem()
	}
	seen := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
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
			}
			next = ft
		}
		if err := walkValue(dec, next); err != nil {
			return err
		}
	}
	return nil
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
