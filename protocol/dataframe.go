package protocol

import (
	"bytes"
	"encoding/base64"
	"strconv"
)

// ParseUploadData reads an upload/data request written in the one common
// spelling (the Go client's: members in this order, no spaces, a numeric
// id, a printable ASCII stream id, eof true, false or absent) without
// encoding/json, whose per-byte passes over a frame of base64 were most of
// the resident's cost of an upload. Anything else, however valid, answers
// ok=false and takes ParseEnvelope's and DecodeParams' way: this is a
// subset of that way's language, with the same meaning.
//
//	{"jsonrpc":"2.0","id":N,"method":"upload/data","params":{"stream_id":"S","data":"B64"[,"eof":true|false]}}
func ParseUploadData(body []byte) (Envelope, *UploadDataParams, bool) {
	rest, ok := bytes.CutPrefix(body, []byte(`{"jsonrpc":"2.0","id":`))
	if !ok {
		return Envelope{}, nil, false
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	id, rest := rest[:digits], rest[digits:]
	n, err := strconv.ParseInt(string(id), 10, 64)
	if digits == 0 || err != nil || n > 1<<53 || (digits > 1 && id[0] == '0') {
		return Envelope{}, nil, false
	}
	const head = `,"method":"` + MethodUploadData + `","params":`
	if rest, ok = bytes.CutPrefix(rest, []byte(head)); !ok {
		return Envelope{}, nil, false
	}
	params := rest[:len(rest)-min(len(rest), 1)] // without the envelope's closing brace
	if !bytes.HasSuffix(rest, []byte("}")) {
		return Envelope{}, nil, false
	}
	p, ok := parseUploadParams(params)
	if !ok {
		return Envelope{}, nil, false
	}
	return Envelope{ID: id, Method: MethodUploadData, Params: params}, p, true
}

func parseUploadParams(b []byte) (*UploadDataParams, bool) {
	b, ok := bytes.CutPrefix(b, []byte(`{"stream_id":"`))
	if !ok {
		return nil, false
	}
	end := 0
	for end < len(b) && b[end] >= 0x20 && b[end] < 0x7f && b[end] != '"' && b[end] != '\\' {
		end++
	}
	stream, b := b[:end], b[end:]
	if b, ok = bytes.CutPrefix(b, []byte(`","data":"`)); !ok {
		return nil, false
	}
	end = 0
	for end < len(b) && isBase64Char[b[end]] {
		end++
	}
	encoded, b := b[:end], b[end:]
	p := &UploadDataParams{StreamID: string(stream)}
	switch string(b) {
	case `"}`:
	case `","eof":true}`:
		p.EOF = true
	case `","eof":false}`:
	default:
		return nil, false
	}
	// As encoding/json decodes a []byte: standard alphabet, padded.
	p.Data = make([]byte, base64.StdEncoding.DecodedLen(len(encoded)))
	n, err := base64.StdEncoding.Decode(p.Data, encoded)
	if err != nil {
		return nil, false
	}
	p.Data = p.Data[:n]
	if n == 0 {
		p.Data = nil // "data":"" decodes to an empty slice; the handler treats both alike
	}
	return p, true
}

var isBase64Char = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()
