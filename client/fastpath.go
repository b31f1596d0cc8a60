package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/resident-dev/resident/protocol"
)

// Data notifications (exec/output, store/data) are nearly every frame of a
// large transfer, and encoding/json spends most of the client's time
// validating and unquoting their base64 (measured: about half the client's
// CPU on the single-pass decode alone). The resident writes them in one
// fixed layout (resident/pump.go, resident/store.go); decodeData accepts
// exactly that layout and decodes the base64 directly. Anything else (other
// member order, whitespace, another sender) returns ok false and takes the
// encoding/json path, which gives the same answer for every frame this one
// accepts (FuzzDecodeData checks that).
var (
	execOutputHead = []byte(`{"jsonrpc":"2.0","method":"` + protocol.NotifyExecOutput + `","params":{"exec_id":`)
	storeDataHead  = []byte(`{"jsonrpc":"2.0","method":"` + protocol.NotifyStoreData + `","params":{"stream_id":`)
	streamMember   = []byte(`,"stream":"`)
	dataMember     = []byte(`,"data":"`)
	dataTail       = []byte(`"}}`)
)

func decodeData(body []byte) (method string, p knownParams, ok bool) {
	var id string
	rest, isExec := bytes.CutPrefix(body, execOutputHead)
	if isExec {
		method = protocol.NotifyExecOutput
	} else if rest, ok = bytes.CutPrefix(body, storeDataHead); ok {
		method = protocol.NotifyStoreData
	} else {
		return "", p, false
	}
	if id, rest, ok = cutJSONString(rest); !ok {
		return "", p, false
	}
	if isExec {
		p.ExecID = id
		if rest, ok = bytes.CutPrefix(rest, streamMember); !ok {
			return "", p, false
		}
		var stream []byte
		if stream, rest, ok = bytes.Cut(rest, []byte(`"`)); !ok {
			return "", p, false
		}
		switch string(stream) {
		case protocol.StreamStdout, protocol.StreamStderr:
			p.Stream = string(stream)
		default:
			return "", p, false
		}
	} else {
		p.StreamID = id
	}
	if rest, ok = bytes.CutPrefix(rest, dataMember); !ok {
		return "", p, false
	}
	b64, ok := bytes.CutSuffix(rest, dataTail)
	// base64 skips CR and LF, which a JSON string cannot hold raw; every
	// other byte outside the alphabet (a quote, a backslash) is an error.
	if !ok || bytes.ContainsAny(b64, "\r\n") {
		return "", p, false
	}
	p.Data = make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(p.Data, b64)
	if err != nil {
		return "", p, false
	}
	p.Data = p.Data[:n]
	return method, p, true
}

// cutJSONString decodes the JSON string at the start of b and returns the
// rest after it.
func cutJSONString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			var s string
			if json.Unmarshal(b[:i+1], &s) != nil {
				return "", nil, false
			}
			return s, b[i+1:], true
		}
	}
	return "", nil, false
}
