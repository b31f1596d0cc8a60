package protocol

import (
	"encoding/json"
	"reflect"
	"sort"
	"unicode/utf8"
)

// closedKeys is a params type whose unknown keys are refused instead of
// ignored. The spec is one: a key the resident does not know would shape
// the sandbox in a way nobody enforces (a misspelt "read_only_rot" would
// leave the root writable), so a host learns at once that this resident
// does not have it, and the error names the key. Provider-specific spec
// fields, when a provider needs them, get a typed object of their own in the
// spec rather than loose keys.
type closedKeys interface {
	// keysOf names the object in the error ("spec").
	keysOf() string
}

func (Spec) keysOf() string        { return "spec" }
func (VolumeMount) keysOf() string { return "spec.volumes entry" }

func sortedKeys(fields map[string]reflect.Type) []string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// decodedKey is key as encoding/json decodes it: str returns an unescaped
// key's bytes as they are, and the decoder turns invalid UTF-8 into U+FFFD,
// so an error names the key the host will see echoed back the same way.
func decodedKey(key string) string {
	if utf8.ValidString(key) {
		return key
	}
	var s string
	if err := json.Unmarshal([]byte(`"`+key+`"`), &s); err != nil {
		return key
	}
	return s
}
