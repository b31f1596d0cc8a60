package hardening

import (
	"bytes"
	"encoding/json"
)

// ScrubJSON scrubs a JSON text and keeps it valid JSON. Secrets are
// registered in their JSON-escaped forms, so a match inside a string literal
// becomes the mask, itself a valid literal. Two coincidences could still
// break the text, and are repaired: a match that began right after an
// escape's backslash, and (after that) any match that swallowed structure.
func (s *Scrubber) ScrubJSON(text []byte) []byte {
	scrubbed := s.Scrub(text)
	if len(scrubbed) == len(text) && (len(text) == 0 || &scrubbed[0] == &text[0]) {
		return scrubbed
	}
	if json.Valid(scrubbed) {
		return scrubbed
	}
	if repaired := repairEscapes(scrubbed); json.Valid(repaired) {
		return repaired
	}
	return repairEscapes(s.Scrub(s.scrubValues(text)))
}

// repairEscapes fixes the one way a mask can break JSON text: a match that
// began right after an escape's backslash (JSON "\n" then the rest of a
// secret starting with "n") leaves "\[REDACTED]", an invalid escape. Doubling
// that backslash keeps the text valid and the secret masked; the escaped
// character it began is part of what was masked.
func repairEscapes(text []byte) []byte {
	mask := []byte(Mask)
	var out []byte
	last := 0
	for i := 0; i < len(text); {
		j := bytes.Index(text[i:], mask)
		if j < 0 {
			break
		}
		at := i + j
		slashes := 0
		for k := at - 1; k >= 0 && text[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 1 {
			out = append(out, text[last:at]...)
			out = append(out, '\\')
			last = at
		}
		i = at + len(mask)
	}
	if out == nil {
		return text
	}
	return append(out, text[last:]...)
}

// scrubValues decodes a JSON text, scrubs every string in it (keys too) as
// plain text, and encodes it again.
func (s *Scrubber) scrubValues(body []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"unencodable message withheld"}}`)
	}
	out, _ := json.Marshal(scrubAny(v, s))
	return out
}

func scrubAny(v any, scrubber *Scrubber) any {
	switch t := v.(type) {
	case string:
		return scrubber.ScrubString(t)
	case []any:
		for i := range t {
			t[i] = scrubAny(t[i], scrubber)
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[scrubber.ScrubString(k)] = scrubAny(val, scrubber)
		}
		return out
	}
	return v
}
