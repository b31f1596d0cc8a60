package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/resident-dev/resident/protocol"
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
		method, p, ok := decodeData(body, nil)
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
		if _, _, ok := decodeData([]byte(body), nil); ok {
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
		if method, p, ok := decodeData(body, nil); ok {
			sameAsJSON(t, body, method, p)
		}
		// Into a recycled buffer, dirty from an earlier frame: the same.
		if method, p, ok := decodeData(body, bytes.Repeat([]byte{0xee}, len(body))); ok {
			sameAsJSON(t, body, method, p)
		}
	})
}

// The hand-made frame of a data request says what json.Marshal says of the
// same message: the same members with the same values (data last); other
// messages, and small data, take json.Marshal's way.
func TestDataRequestMatchesMarshal(t *testing.T) {
	id := int64(41)
	big := bytes.Repeat([]byte{0, 0xff, 'a', '"'}, 700)
	for _, msg := range []outgoing{
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodUploadData, Params: protocol.UploadDataParams{StreamID: "u1", Data: big}},
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodUploadData, Params: protocol.UploadDataParams{StreamID: `we"ird\✓<>`, Data: big[:1025], EOF: true}},
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodExecStdin, Params: protocol.ExecStdinParams{ExecID: "e<1>", Data: big, EOF: true}},
	} {
		frame, n, ok := appendDataRequest([]byte("left alone"), msg)
		if !ok {
			t.Fatalf("%s: no fast path", msg.Method)
		}
		fr := protocol.NewFrameReader(bytes.NewReader(bytes.TrimPrefix(frame, []byte("left alone"))), 1<<30)
		body, err := fr.Read()
		if err != nil || len(body) != n {
			t.Fatalf("%s: frame %v, body %d bytes, said %d", msg.Method, err, len(body), n)
		}
		want, _ := json.Marshal(msg)
		var got, wantV any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: not JSON: %v", msg.Method, err)
		}
		_ = json.Unmarshal(want, &wantV)
		if !reflect.DeepEqual(got, wantV) {
			t.Fatalf("%s: fast %s\nmarshal %s", msg.Method, body, want)
		}
	}
	for _, msg := range []outgoing{
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodUploadData, Params: protocol.UploadDataParams{StreamID: "u1", Data: big[:1023]}},
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodUploadData, Params: protocol.UploadDataParams{StreamID: "u1", EOF: true}},
		{JSONRPC: "2.0", Method: protocol.MethodExecStdin, Params: protocol.ExecStdinParams{ExecID: "e", Data: big}},
		{JSONRPC: "2.0", ID: &id, Method: protocol.MethodSandboxWrite, Params: protocol.WriteFileParams{SandboxID: "s", Path: "p", Data: big}},
	} {
		if _, _, ok := appendDataRequest(nil, msg); ok {
			t.Fatalf("fast path took %+v", msg)
		}
	}
}
