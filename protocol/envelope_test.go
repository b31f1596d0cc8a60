package protocol

import (
	"bytes"
	"encoding/json"
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

// Params are the frame's own bytes, not a copy (a copy of a 16 MiB frame is
// 16 MiB more per request), and exactly what encoding/json would give.
func TestEnvelopeParamsAreASliceOfTheFrame(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"x"}}`,
		`{ "params" : { "params": 1, "s": "\"}" } , "jsonrpc":"2.0","id":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2],"meta":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","x":{"params":7}}`,
	} {
		frame := []byte(body)
		env, bad := ParseEnvelope(frame)
		if bad != nil {
			t.Fatalf("%s: %v", body, bad)
		}
		checkParams(t, frame, env)
	}
	if env, bad := ParseEnvelope([]byte(`{"jsonrpc":"2.0","id":3,"result":null}`)); bad != nil || !env.Response {
		t.Fatalf("a null result is a response: %+v %v", env, bad)
	}
}

func checkParams(t *testing.T, frame []byte, env Envelope) {
	t.Helper()
	var want struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(frame, &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(env.Params, want.Params) {
		t.Fatalf("%s: params %q, want %q", frame, env.Params, want.Params)
	}
	// A slice of frame runs on to frame's own last byte of capacity.
	if p := env.Params[:cap(env.Params)]; len(p) > 0 && &p[len(p)-1] != &frame[:cap(frame)][cap(frame)-1] {
		t.Fatalf("%s: params are a copy", frame)
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
		if err == nil && !env.Response {
			checkParams(t, body, env)
		}
	})
}
