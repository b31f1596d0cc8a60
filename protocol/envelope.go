package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Envelope is the validated outer shape of one incoming message.
type Envelope struct {
	// ID is the raw JSON id (a string or a non-negative integer); nil for a
	// notification.
	ID     json.RawMessage
	Method string
	// Params is a slice of the frame body, not a copy: whoever keeps it
	// keeps the whole frame.
	Params json.RawMessage
	// Response is true for a response object (the resident sends no
	// requests, so these are logged and dropped).
	Response bool
}

// EnvelopeError is a message the session survives: it is answered with Code
// and the id it carried (null when none could be read).
type EnvelopeError struct {
	ID   json.RawMessage
	Code int64
	Msg  string
}

func (e *EnvelopeError) Error() string { return e.Msg }

// ParseEnvelope validates body as one JSON-RPC 2.0 request, notification or
// response before any library sees it, so that no malformed message can end
// the session: invalid UTF-8 or JSON is a parse error, anything else that is
// not a single well-formed message is an invalid request.
func ParseEnvelope(body []byte) (Envelope, *EnvelopeError) {
	if !utf8.Valid(body) {
		return Envelope{}, &EnvelopeError{Code: CodeParseError, Msg: "parse error: frame body is not valid UTF-8"}
	}
	if !json.Valid(body) {
		return Envelope{}, &EnvelopeError{Code: CodeParseError, Msg: "parse error: frame body is not valid JSON"}
	}
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return Envelope{}, &EnvelopeError{Code: CodeInvalidRequest, Msg: "invalid request: batches are not supported; send one message per frame"}
	case len(trimmed) == 0 || trimmed[0] != '{':
		return Envelope{}, &EnvelopeError{Code: CodeInvalidRequest, Msg: "invalid request: a message must be a JSON object"}
	}
	// Params, result and error are not decoded here: params are found as
	// a slice of body below, and a result or error only has to be there.
	var fields struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Method  *json.RawMessage `json:"method"`
		Result  present          `json:"result"`
		Error   present          `json:"error"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return Envelope{}, &EnvelopeError{Code: CodeInvalidRequest, Msg: "invalid request: " + err.Error()}
	}
	if err := checkKeysOf(body, reflectTypeOfEnvelope, true); err != nil { // json.Valid above
		// Echo the id when it is unambiguous, so the host can match the
		// answer to its request; a duplicated id itself gets null.
		var echo json.RawMessage
		if idKeys(body) == 1 {
			echo, _ = validID(fields.ID)
		}
		return Envelope{}, &EnvelopeError{ID: echo, Code: CodeInvalidRequest, Msg: "invalid request: " + err.Error()}
	}
	id, idErr := validID(fields.ID)
	fail := func(msg string) (Envelope, *EnvelopeError) {
		return Envelope{}, &EnvelopeError{ID: id, Code: CodeInvalidRequest, Msg: "invalid request: " + msg}
	}
	if idErr != "" {
		return fail(idErr)
	}
	if fields.JSONRPC == nil || *fields.JSONRPC != "2.0" {
		return fail(`"jsonrpc" must be "2.0"`)
	}
	if fields.Method == nil {
		if fields.Result || fields.Error {
			return Envelope{ID: id, Response: true}, nil
		}
		return fail(`missing "method"`)
	}
	var method string
	if err := json.Unmarshal(*fields.Method, &method); err != nil || method == "" {
		return fail(`"method" must be a non-empty string`)
	}
	params := topLevelValue(body, "params")
	if len(params) > 0 && params[0] != '{' && params[0] != '[' && string(params) != "null" {
		return fail(`"params" must be an object`)
	}
	return Envelope{ID: id, Method: method, Params: params}, nil
}

// present records that a key was there, without keeping its value.
type present bool

func (p *present) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}

// topLevelValue returns the value of key in the JSON object body (valid,
// its keys checked: key appears once, spelled exactly) as a slice of body,
// or nil. encoding/json would copy it into a RawMessage, and the params of
// a large request are nearly its whole frame.
func topLevelValue(body []byte, key string) []byte {
	k := keyScanner{data: body, skipOnly: true}
	k.space()
	k.pos++ // {
	k.space()
	if k.pos >= len(k.data) || k.data[k.pos] == '}' {
		return nil
	}
	for {
		k.space()
		name, err := k.str()
		if err != nil {
			return nil
		}
		k.space()
		k.pos++ // :
		k.space()
		start := k.pos
		if err := k.value(nil); err != nil {
			return nil
		}
		if name == key {
			return body[start:k.pos]
		}
		if done, err := k.next('}'); done || err != nil {
			return nil
		}
	}
}

// validID accepts a string or an integer in [0, 2^53]; it returns the id to
// echo (nil when absent or unusable) and a problem description.
//
// The id to echo is spelled canonically, as encoding/json writes its value,
// never as the host spelled it: the scrubber masks a secret in the spellings
// encoding/json produces, and a string has countless others ("\u0073" is
// "s"), so a raw echo could carry a credential past it. The value is the
// request's own, which is what JSON-RPC requires of a response id; and it
// is the spelling the connection uses for the ids of all other responses.
func validID(raw json.RawMessage) (json.RawMessage, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, ""
	}
	switch raw[0] {
	case '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, `"id" must be a string or an integer`
		}
		canonical, _ := json.Marshal(str)
		return canonical, ""
	case 'n':
		return nil, `"id" must be a string or an integer, not null`
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > 1<<53 {
		return nil, `"id" must be a string or an integer between 0 and 2^53`
	}
	return json.RawMessage(strconv.FormatInt(n, 10)), ""
}

var reflectTypeOfEnvelope = reflect.TypeOf(struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}{})

// idKeys counts the top-level keys of a valid JSON object that spell "id" in
// any case.
func idKeys(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return 0
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		if key, _ := tok.(string); strings.EqualFold(key, "id") {
			n++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0
		}
	}
	return n
}
