package protocol

import (
	"bytes"
	"strings"
	"testing"
)

// The fast path reads exactly what the general one reads, and refuses
// (ok=false, so the general one decides) everything outside its spelling.
func TestParseUploadDataAgreesWithTheGeneralPath(t *testing.T) {
	accepted := []string{
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"up-1","data":"aGVsbG8g"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"upload/data","params":{"stream_id":"u","data":"d29ybGQ=","eof":true}}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"upload/data","params":{"stream_id":"a b<c>","data":"","eof":false}}`,
		`{"jsonrpc":"2.0","id":12,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUJD", 50000) + `"}}`,
	}
	for _, body := range accepted {
		env, p, ok := ParseUploadData([]byte(body))
		if !ok {
			t.Fatalf("fast path refused %.80s", body)
		}
		want, bad := ParseEnvelope([]byte(body))
		if bad != nil {
			t.Fatalf("general path refused %.80s: %s", body, bad.Msg)
		}
		var wantP UploadDataParams
		if err := DecodeParams(want.Params, &wantP); err != nil {
			t.Fatal(err)
		}
		if string(env.ID) != string(want.ID) || env.Method != want.Method || !bytes.Equal(env.Params, want.Params) {
			t.Errorf("%.80s: envelope %q %q %.40q, want %q %q %.40q", body, env.ID, env.Method, env.Params, want.ID, want.Method, want.Params)
		}
		if p.StreamID != wantP.StreamID || p.EOF != wantP.EOF || !bytes.Equal(p.Data, wantP.Data) {
			t.Errorf("%.80s: params %q %v %d bytes, want %q %v %d", body, p.StreamID, p.EOF, len(p.Data), wantP.StreamID, wantP.EOF, len(wantP.Data))
		}
	}
	refused := []string{
		`{"jsonrpc":"2.0","id":"7","method":"upload/data","params":{"stream_id":"u","data":"aGk="}}`,      // string id
		`{"jsonrpc":"2.0","id":07,"method":"upload/data","params":{"stream_id":"u","data":"aGk="}}`,       // not JSON
		`{"jsonrpc":"2.0","id":-1,"method":"upload/data","params":{"stream_id":"u","data":"aGk="}}`,       // bad id
		`{"jsonrpc":"2.0","id":7,"method":"exec/stdin","params":{"stream_id":"u","data":"aGk="}}`,         // other method
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"data":"aGk=","stream_id":"u"}}`,        // other order
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u\"","data":"aGk="}}`,      // escape
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aGk"}}`,         // bad base64
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aG\/k="}}`,      // escaped slash
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aGk=","x":1}}`,  // unknown key
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aGk="}} `,       // trailing space
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aGk="},"x":1}`,  // extra member
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"é","data":"aGk="}}`,        // not ASCII
		`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"u","data":"aGk=","eof":1}}`, // bad eof
	}
	for _, body := range refused {
		if _, _, ok := ParseUploadData([]byte(body)); ok {
			t.Errorf("fast path took %s", body)
		}
	}
}

func FuzzParseUploadData(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"up-1","data":"aGVsbG8g","eof":true}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, p, ok := ParseUploadData(body)
		if !ok {
			return
		}
		want, bad := ParseEnvelope(body)
		if bad != nil {
			t.Fatalf("fast path took what the general one refuses: %q (%s)", body, bad.Msg)
		}
		var wantP UploadDataParams
		if err := DecodeParams(want.Params, &wantP); err != nil {
			t.Fatalf("fast path took params the general one refuses: %q (%v)", body, err)
		}
		if string(env.ID) != string(want.ID) || p.StreamID != wantP.StreamID || p.EOF != wantP.EOF || !bytes.Equal(p.Data, wantP.Data) {
			t.Fatalf("the two paths disagree on %q", body)
		}
	})
}
