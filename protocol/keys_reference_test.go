package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// referenceCheckKeys is the first checkKeys, built on json.Decoder.Token:
// slow but plainly right. The byte scanner that replaced it must agree with
// it on every valid JSON text.
func referenceCheckKeys(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return referenceWalkValue(dec, t)
}

func referenceWalkValue(dec *json.Decoder, t reflect.Type) error {
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
			if err := referenceWalkValue(dec, elem); err != nil {
				return err
			}
		}
	case '{':
		if err := referenceWalkObject(dec, t); err != nil {
			return err
		}
	}
	_, err = dec.Token() // closing delimiter
	return err
}

func referenceWalkObject(dec *json.Decoder, t reflect.Type) error {
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
				if closed, ok := reflect.Zero(t).Interface().(closedKeys); ok {
					return fmt.Errorf("%s has no key %q (known: %s)", closed.keysOf(), key, strings.Join(sortedKeys(fields), ", "))
				}
			}
			next = ft
		}
		if err := referenceWalkValue(dec, next); err != nil {
			return err
		}
	}
	return nil
}

var keyCheckTypes = []reflect.Type{
	nil,
	reflectTypeOfEnvelope,
	reflect.TypeOf(CreateParams{}),
	reflect.TypeOf(ExecParams{}),
	reflect.TypeOf(&InitializeParams{}),
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkAgainstReference(t *testing.T, raw []byte) {
	if !json.Valid(raw) {
		return
	}
	for _, typ := range keyCheckTypes {
		got, want := checkKeys(raw, typ), referenceCheckKeys(raw, typ)
		if errText(got) != errText(want) {
			t.Fatalf("%s as %v:\n scanner:   %v\n reference: %v", raw, typ, got, want)
		}
	}
}

var keyCheckSeeds = []string{
	`{"spec":{"image":"x","env":{"A":"1"}},"tags":{"t":"v"},"future_field":1}`,
	`{"spec":{"Image":"x"}}`,
	`{"tags":{"k":"a","k":"b"}}`,
	`{"spec":{"volumes":[{"name":"a","Name":"b"}]}}`,
	`{"spec":{"image":"x","gpu":1}}`,
	`{"spec":{"volumes":[{"name":"a","rw":true}]}}`,
	`{"spec":{"image":"x"},"spec":{"image":"y"}}`,
	`{"env":{"A":"1","a":"2"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}`,
	`{"jsonrpc":"2.0","ID":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"m"}`,
	`{"s\u0061ndbox_id":"x","sandbox_id":"y"}`,
	`{"argv":["a","b",{"x":1,"x":2}],"timeout_s":1.5e3,"stdin":true,"env":null}`,
	` [ {"a" : [ [ ] , { } , "\"}" , -0.5 , false ] } , null ] `,
	`{"a\"b":1,"a\"b":2}`,
	`{"":1,"":2}`,
	`"str"`, `12`, `true`, `[]`, `{}`,
}

func TestCheckKeysAgreesWithReference(t *testing.T) {
	for _, seed := range keyCheckSeeds {
		checkAgainstReference(t, []byte(seed))
	}
}

// FuzzCheckKeys holds the byte scanner to the token-decoder reference.
func FuzzCheckKeys(f *testing.F) {
	for _, seed := range keyCheckSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkAgainstReference(t, raw)
	})
}
