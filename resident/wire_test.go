package resident

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// Messages the session survives: each is answered the documented way and the
// next request still works.
func TestSurvivableWireErrors(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	steps := []struct {
		name, body, id string
		code           int64
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,`, "null", protocol.CodeParseError},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", "null", protocol.CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":50,"method":"shutdown"}]`, "null", protocol.CodeInvalidRequest},
		{"not an object", `42`, "null", protocol.CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":51,"method":"shutdown"}`, "51", protocol.CodeInvalidRequest},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}`, "null", protocol.CodeInvalidRequest},
		{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"shutdown"}`, "null", protocol.CodeInvalidRequest},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"shutdown"}`, "null", protocol.CodeInvalidRequest},
		{"missing method", `{"jsonrpc":"2.0","id":52}`, "52", protocol.CodeInvalidRequest},
		{"duplicate top-level key", `{"jsonrpc":"2.0","id":53,"method":"shutdown","method":"initialize"}`, "53", protocol.CodeInvalidRequest},
		{"unknown method", `{"jsonrpc":"2.0","id":54,"method":"sandbox/nope"}`, "54", protocol.CodeMethodNotFound},
		{"params not an object", `{"jsonrpc":"2.0","id":55,"method":"sandbox/read_owner","params":"x"}`, "55", protocol.CodeInvalidRequest},
		{"params wrong type", `{"jsonrpc":"2.0","id":56,"method":"sandbox/read_owner","params":{"sandbox_id":5}}`, "56", protocol.CodeInvalidParams},
		{"duplicate param key", `{"jsonrpc":"2.0","id":57,"method":"sandbox/read_owner","params":{"sandbox_id":"a","sandbox_id":"b"}}`, "57", protocol.CodeInvalidRequest},
		{"duplicate id key", `{"jsonrpc":"2.0","id":60,"Id":61,"method":"shutdown"}`, "null", protocol.CodeInvalidRequest},
		{"case-variant param key", `{"jsonrpc":"2.0","id":58,"method":"sandbox/read_owner","params":{"Sandbox_ID":"a"}}`, "58", protocol.CodeInvalidParams},
		{"string id echoed", `{"jsonrpc":"2.0","id":"s-1","method":"sandbox/nope"}`, `"s-1"`, protocol.CodeMethodNotFound},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			h.t = t
			h.mu.Lock()
			delete(h.responses, step.id)
			h.mu.Unlock()
			h.sendRaw(step.body)
			m := h.await(step.id)
			if m.Error == nil || m.Error.Code != step.code || m.Error.Data.Kind != protocol.KindInvalidRequest {
				t.Fatalf("got %+v, want code %d kind invalid_request", m.Error, step.code)
			}
			h.call(protocol.MethodSandboxList, nil, nil) // the session goes on
		})
	}
	h.t = t
	// Unknown notifications and responses from the host are ignored.
	h.notify("$/unknown", map[string]any{})
	h.sendRaw(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	h.call(protocol.MethodSandboxList, nil, nil)
}

func TestDuplicateInFlightRequestID(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{}, &box)
	h.sendRaw(`{"jsonrpc":"2.0","id":"dup","method":"sandbox/exec","params":{"sandbox_id":"` + box.SandboxID + `","argv":["sleep"],"exec_id":"x"}}`)
	h.sendRaw(`{"jsonrpc":"2.0","id":"dup","method":"sandbox/list_owned"}`)
	m := h.await(`"dup"`)
	if m.Error == nil || m.Error.Data.Kind != protocol.KindInvalidRequest {
		t.Fatalf("duplicate in-flight id: %+v", m)
	}
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "x"}, nil)
}
