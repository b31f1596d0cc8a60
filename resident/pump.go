package resident

import (
	"encoding/base64"
	"encoding/json"
	"io"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// pumpBufferBytes is the largest read of process output: large enough that
// a fast producer costs few frames, small enough that a slow one is seen
// live. A pump starts at pumpMinBufferBytes and doubles its buffer only
// when a read fills it, so a quiet stream (most stderr) holds 4 KiB, not
// 64: with a hundred execs streaming, that is most of the resident's memory.
const (
	pumpBufferBytes    = 64 << 10
	pumpMinBufferBytes = 4 << 10
)

// growBuffer doubles buf, up to pumpBufferBytes, when the last read filled
// it.
func growBuffer(buf []byte, n int) []byte {
	if n == len(buf) && len(buf) < pumpBufferBytes {
		return make([]byte, min(2*len(buf), pumpBufferBytes))
	}
	return buf
}

type pumpResult struct {
	total   int64 // bytes the process wrote
	dropped int64 // bytes past the output cap, counted and never sent
}

// startPump streams one output stream of an exec to the host: raw bytes are
// capped, scrubbed, base64-encoded and sent as exec/output notifications in
// order. It always reads to EOF, so the process never blocks on a full pipe,
// even after the host is gone or the cap is reached.
func (s *session) startPump(execID, stream string, r io.Reader) <-chan pumpResult {
	done := make(chan pumpResult, 1)
	go func() {
		var res pumpResult
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("output pump panicked", zap.Any("panic", p))
				_, _ = io.Copy(io.Discard, r)
			}
			done <- res
		}()
		send := s.outputSender(execID, stream)
		scrubbed := s.scrub.Stream(send)
		limit := s.opts.Limits.OutputCapBytes
		buf := make([]byte, pumpMinBufferBytes)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				res.total += int64(n)
				keep := int64(n)
				if sent := res.total - int64(n) - res.dropped; sent+keep > limit {
					keep = max(limit-sent, 0)
				}
				res.dropped += int64(n) - keep
				if keep > 0 {
					_, _ = scrubbed.Write(buf[:keep]) // a dead host only stops sending
				}
			}
			if err != nil {
				break
			}
			buf = growBuffer(buf, n)
		}
		if res.dropped > 0 {
			// The cap cut the stream: a held-back tail may be the start of
			// a secret that the cap cut in two, so it is dropped, not
			// flushed, and counted.
			res.dropped += int64(scrubbed.Buffered())
			return
		}
		_ = scrubbed.Flush()
	}()
	return done
}

// outputSender frames scrubbed chunks as exec/output. After the first failed
// write it stops trying: the host is gone and Serve is already ending.
func (s *session) outputSender(execID, stream string) func([]byte) error {
	var failed error
	prefix := outputPrefix(execID, stream)
	return func(chunk []byte) error {
		if failed != nil || len(chunk) == 0 {
			return failed
		}
		failed = s.stream.writeData(prefix, chunk)
		return failed
	}
}

// The exec/output body is built by hand: it is the hot path, and
// encoding/json would encode the base64 text and then scan it again.
func outputPrefix(execID, stream string) []byte {
	id, _ := jsonMarshalString(execID)
	prefix := []byte(`{"jsonrpc":"2.0","method":"` + protocol.NotifyExecOutput + `","params":{"exec_id":`)
	prefix = append(prefix, id...)
	return append(prefix, `,"stream":"`+stream+`","data":"`...)
}

// dataSuffix closes the data string, params and the message.
const dataSuffix = `"}}`

// dataBodyLen is the length of a body built by appendDataBody.
func dataBodyLen(prefix, data []byte) int {
	return len(prefix) + base64.StdEncoding.EncodedLen(len(data)) + len(dataSuffix)
}

// appendDataBody appends prefix, data in base64 and the closing of the
// message: an exec/output or store/data body.
func appendDataBody(dst, prefix, data []byte) []byte {
	dst = append(dst, prefix...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, dataSuffix...)
}

func jsonMarshalString(s string) ([]byte, error) { return json.Marshal(s) }
