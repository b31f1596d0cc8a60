package protocol

import (
	"bytes"
	"encoding/base64"
)

// dataMethods are the requests whose frames carry bulk bytes as a base64
// "data" member of their params ([]byte fields named "data").
var dataMethods = map[string]bool{
	MethodUploadData:   true,
	MethodExecStdin:    true,
	MethodSandboxWrite: true,
}

// minDataFastPath is the shortest base64 data worth taking out of a frame:
// below it the copy of the rest of the frame costs more than it saves.
const minDataFastPath = 1 << 10

// ParseDataEnvelope is ParseEnvelope for frames that may carry bulk data.
// A data frame spends most of its bytes in one base64 string, and the strict
// path goes over every byte of it seven times (UTF-8, json.Valid, the
// envelope's decode, key scans, the params' decode). Here the "data" member
// of such a frame is cut out first: the frame with `"data":""` in its place
// goes through ParseEnvelope and, later, DecodeValidParams exactly as any
// other frame (so every key, type and envelope rule holds as before), and
// the data comes back decoded in Envelope.Data, for DecodeDataParams.
//
// The cut is taken only when it cannot change what the strict path
// decides: the string is made of base64's alphabet alone (no escapes, so
// its JSON value is its bytes, and it is valid UTF-8 and valid JSON string
// text whatever it holds), it decodes with base64.StdEncoding as
// encoding/json would decode it, and the validated remainder shows the
// empty string at the cut as the params' own "data". Anything else, a bad
// frame included, goes the strict way over the whole frame, so its answer
// is exactly today's.
func ParseDataEnvelope(body []byte) (Envelope, *EnvelopeError) {
	return ParseDataEnvelopeInto(body, nil)
}

// ParseDataEnvelopeInto is ParseDataEnvelope decoding the data into buf
// when it has room (a buffer the caller recycles), else into a new buffer;
// Envelope.Data aliases buf then. When the data was cut out (Data is not
// nil), the envelope refers to nothing of body, which the caller may then
// reuse at once.
func ParseDataEnvelopeInto(body, buf []byte) (Envelope, *EnvelopeError) {
	if env, ok := cutData(body, buf); ok {
		return env, nil
	}
	return ParseEnvelope(body)
}

func cutData(body, buf []byte) (Envelope, bool) {
	start, end := findDataString(body)
	if start < 0 {
		return Envelope{}, false
	}
	span := body[start+1 : end-1]
	data := buf[:0:cap(buf)]
	if size := base64.StdEncoding.DecodedLen(len(span)); cap(data) < size {
		data = make([]byte, size)
	}
	data = data[:cap(data)]
	// base64.StdEncoding.Decode's answer, refusing CR and LF too
	n, ok := DecodeBase64Strict(data, span)
	if !ok {
		return Envelope{}, false
	}
	rest := make([]byte, 0, len(body)-len(span))
	rest = append(append(rest, body[:start+1]...), body[end-1:]...)
	env, bad := ParseEnvelope(rest)
	if bad != nil || env.Response || !dataMethods[env.Method] {
		return Envelope{}, false
	}
	at := topLevelValue(env.Params, "data")
	if len(at) != 2 || &at[0] != &rest[start] {
		return Envelope{}, false // the string cut was not the params' data
	}
	env.Data = data[:n]
	return env, true
}

// findDataString returns the bounds (quotes included) of the first string
// at least minDataFastPath long that follows a `"data"` key in body, or
// -1; cutData decodes it as base64, refusing any byte outside base64's
// alphabet, CR and LF included. body is not validated yet: what is found
// is only a candidate, which cutData confirms against the validated
// remainder.
func findDataString(body []byte) (start, end int) {
	const key = `"data"`
	for from := 0; ; {
		i := bytes.Index(body[from:], []byte(key))
		if i < 0 {
			return -1, -1
		}
		pos := from + i + len(key)
		from = pos
		pos = skipSpace(body, pos)
		if pos >= len(body) || body[pos] != ':' {
			continue
		}
		pos = skipSpace(body, pos+1)
		if pos >= len(body) || body[pos] != '"' {
			continue
		}
		// The string runs to the next quote. Whatever it holds besides
		// base64's alphabet makes cutData's decoding fail (a backslash
		// too, and CR and LF, which base64.StdEncoding skips and JSON
		// refuses raw in a string).
		n := bytes.IndexByte(body[pos+1:], '"')
		if n < minDataFastPath {
			continue
		}
		return pos, pos + n + 2
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// DecodeDataParams is DecodeValidParams for the params of an envelope from
// ParseDataEnvelope: data, when the frame's data was cut out, becomes the
// params' Data (v is then the params of a data method).
func DecodeDataParams(raw, data []byte, v any) error {
	if err := DecodeValidParams(raw, v); err != nil {
		return err
	}
	if data == nil {
		return nil
	}
	switch p := v.(type) {
	case *UploadDataParams:
		p.Data = data
	case *ExecStdinParams:
		p.Data = data
	case *WriteFileParams:
		p.Data = data
	default:
		return Errorf(KindInternal, "params %T carry no data", v)
	}
	return nil
}
