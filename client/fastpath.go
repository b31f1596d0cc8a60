package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

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

// decodeData decodes the data into buf when it has room (the read loop
// recycles it: sinks write it out before the next frame is read), else
// into a new buffer.
func decodeData(body, buf []byte) (method string, p knownParams, ok bool) {
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
	if !ok {
		return "", p, false
	}
	if size := base64.StdEncoding.DecodedLen(len(b64)); cap(buf) >= size {
		p.Data = buf[:size]
	} else {
		p.Data = make([]byte, size)
	}
	// Every byte outside the alphabet (a quote, a backslash) fails it, and
	// so do CR and LF, which base64 would skip and a JSON string cannot
	// hold raw.
	n, ok := protocol.DecodeBase64Strict(p.Data, b64)
	if !ok {
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

// appendDataRequest appends the frame of a request whose params carry bulk
// data (upload/data, exec/stdin) with the base64 encoded straight into the
// frame, and reports false for any other message (json.Marshal's path).
// The body is what json.Marshal writes for the same outgoing message, but
// for member order: data last (TestDataRequestMatchesMarshal).
func appendDataRequest(dst []byte, msg outgoing) (frame []byte, bodyLen int, ok bool) {
	var idKey, id string
	var data []byte
	var eof bool
	switch p := msg.Params.(type) {
	case protocol.UploadDataParams:
		idKey, id, data, eof = "stream_id", p.StreamID, p.Data, p.EOF
	case protocol.ExecStdinParams:
		idKey, id, data, eof = "exec_id", p.ExecID, p.Data, p.EOF
	default:
		return dst, 0, false
	}
	if msg.ID == nil || len(data) < minDataFastPath {
		return dst, 0, false
	}
	quoted, err := json.Marshal(id)
	if err != nil {
		return dst, 0, false
	}
	head := append([]byte(`{"jsonrpc":"2.0","id":`), strconv.FormatInt(*msg.ID, 10)...)
	head = append(head, `,"method":`...)
	method, _ := json.Marshal(msg.Method)
	head = append(head, method...)
	head = append(head, `,"params":{"`+idKey+`":`...)
	head = append(head, quoted...)
	if eof {
		head = append(head, `,"eof":true`...)
	}
	head = append(head, `,"data":"`...)
	const tail = `"}}`
	bodyLen = len(head) + base64.StdEncoding.EncodedLen(len(data)) + len(tail)
	dst = protocol.AppendFrameHeader(dst, bodyLen)
	dst = append(dst, head...)
	dst = protocol.AppendBase64(dst, data) // base64.StdEncoding's bytes, about twice as fast
	return append(dst, tail...), bodyLen, true
}

// minDataFastPath is the least data worth the hand-made frame.
const minDataFastPath = 1 << 10
