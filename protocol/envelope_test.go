package protocol

import (
	"testing"
)

func TestParseEnvelope(t *testing.T) {
	ok := []struct{ body, method, id string }{
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`, "m", "1"},
		{`{"jsonrpc":"2.0","id":"x","method":"m","params":{}}`, "m", `"x"`},
		{`{"jsonrpc":"2.0","method":"n","params":null}`, "n", ""},
		{`{"jsonrpc":"2.0","id":9007199254740992,"method":"m"}`, "m", "9007199254740992"},
	}
	for _, c := range ok {
		env, err := ParseEnvelope([]byte(c.body))
		if err != nil || env.Method != c.method || string(env.ID) != c.id {
			t.Fatalf("%s: %+v %v", c.body, env, err)
		}
	}
	bad := []struct {
		body string
		code int64
	}{
		{`{`, CodeParseError},
		{"\"\xff\"", CodeParseError},
		{`[]`, CodeInvalidRequest},
		{`"str"`, CodeInvalidRequest},
		{`{"id":1,"method":"m"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1.5,"method":"m"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{},"method":"m"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":3}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","ID":1,"method":"m"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}`, CodeInvalidRequest},
	}
	for _, c := range bad {
		if _, err := ParseEnvelope([]byte(c.body)); err == nil || err.Code != c.code {
			t.Fatalf("%s: want code %d, got %v", c.body, c.code, err)
		}
	}
	if env, err := ParseEnvelope([]byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)); err != nil || !env.Response {
		t.Fatalf("response: %+v %v", env, err)
	}
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":2}]}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := ParseEnvelope(body)
		if err == nil && !env.Response && env.Method == "" {
			t.Fatal("accepted a request without a method")
		}
	})
}
