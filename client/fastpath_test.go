package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"
)

// The resident's own layout, built the way resident/pump.go builds it.
func residentFrame(method, idKey, id, stream string, data []byte) []byte {
	quoted, _ := json.Marshal(id)
	b := []byte(`{"jsonrpc":"2.0","method":"` + method + `","params":{"` + idKey + `":`)
	b = append(b, quoted...)
	if stream != "" {
		b = append(b, `,"stream":"`+stream+`"`...)
	}
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, `"}}`...)
}

func TestDecodeDataTakesTheResidentsLayout(t *testing.T) {
	cases := [][]byte{
		residentFrame("exec/output", "exec_id", "e1", "stdout", []byte("hello\n\xff\x00")),
		residentFrame("exec/output", "exec_id", `we"ird\id ✓`, "stderr", bytes.Repeat([]byte{0xfe}, 4097)),
		residentFrame("store/data", "stream_id", "read-7", "", []byte("x")),
	}
	for _, body := range cases {
		method, p, ok := decodeData(body)
		if !ok {
			t.Fatalf("fast path refused %s", body)
		}
		sameAsJSON(t, body, method, p)
	}
	// Anything else goes the slow way.
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"exec/output","params":{"stream":"stdout","exec_id":"e","data":"eA=="}}`,
		`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"e","stream":"stdout","data":"eA=="}} `,
		`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"e","stream":"stdout","data":"eA\n=="}}`,
		`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"e","stream":"other","data":"eA=="}}`,
		`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"e","stream":"stdout","data":"eA\u003d\u003d"}}`,
		`{"id":1,"result":{},"jsonrpc":"2.0"}`,
	} {
		if _, _, ok := decodeData([]byte(body)); ok {
			t.Fatalf("fast path took %s", body)
		}
	}
}

// sameAsJSON: what the fast path decoded is what encoding/json decodes.
func sameAsJSON(t *testing.T, body []byte, method string, p knownParams) {
	t.Helper()
	var m incoming
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, body)
	}
	if m.Params == nil {
		m.Params = &knownParams{}
	}
	if len(p.Data) == 0 && len(m.Params.Data) == 0 {
		p.Data, m.Params.Data = nil, nil
	}
	if m.Method != method || !reflect.DeepEqual(*m.Params, p) {
		t.Fatalf("fast path %s %+v, encoding/json %s %+v, for %q", method, p, m.Method, *m.Params, body)
	}
}

func FuzzDecodeData(f *testing.F) {
	f.Add(residentFrame("exec/output", "exec_id", "e1", "stdout", []byte("hi")))
	f.Add(residentFrame("store/data", "stream_id", "s\\1", "", []byte{0, 1, 2}))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"\u00e9","stream":"stderr","data":""}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if method, p, ok := decodeData(body); ok {
			sameAsJSON(t, body, method, p)
		}
	})
}
