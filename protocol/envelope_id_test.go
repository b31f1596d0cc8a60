package protocol

import (
	"encoding/json"
	"testing"
)

// TestEchoedIDIsCanonical: an id is echoed as encoding/json spells its
// value, whatever escapes the host used, so the scrubber sees the spelling
// it masks; the value stays the request's.
func TestEchoedIDIsCanonical(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"1.0","id":"\u0073\u0065cret-\u00fc\ud83d\ude00","method":"m"}`, `"secret-ü😀"`},
		{`{"jsonrpc":"1.0","id":"a\/b\u003c","method":"m"}`, `"a/b\u003c"`},
		{`{"jsonrpc":"1.0","id":-0,"method":"m"}`, `0`},
		{`{"jsonrpc":"2.0","id":"\u0078","method":"m","params":{"a":1,"a":2}}`, `"x"`},
	} {
		_, bad := ParseEnvelope([]byte(c.body))
		if bad == nil {
			t.Fatalf("%s: accepted", c.body)
		}
		if string(bad.ID) != c.want {
			t.Errorf("%s: echoed id %s, want %s", c.body, bad.ID, c.want)
		}
	}
}

// FuzzEchoedIDIsCanonical: whatever the body, an id to echo is valid JSON
// that encoding/json would write the same way.
func FuzzEchoedIDIsCanonical(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"1.0","id":"\u0073ecret","method":"m"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\ud83d\ude00\b","method":"m","params":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, bad := ParseEnvelope(body)
		id := env.ID
		if bad != nil {
			id = bad.ID
		}
		if id == nil {
			return
		}
		var v any
		if err := json.Unmarshal(id, &v); err != nil {
			t.Fatalf("id %s is not JSON: %v", id, err)
		}
		if again, _ := json.Marshal(v); string(again) != string(id) {
			t.Fatalf("id %s is not canonical (%s)", id, again)
		}
	})
}
