package resident

import (
	"encoding/base64"
	"encoding/json"
	"io"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// pumpBufferBytes is the read size for process output: large enough that a
// fast producer costs few frames, small enough that a slow one is seen live.
const pumpBufferBytes = 64 << 10

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
		buf := make([]byte, pumpBufferBytes)
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
	var body []byte
	return func(chunk []byte) error {
		if failed != nil || len(chunk) == 0 {
			return failed
		}
		body = appendOutputBody(body[:0], prefix, chunk)
		failed = s.stream.writeFrame(body)
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

func appendOutputBody(dst, prefix, data []byte) []byte {
	dst = append(dst, prefix...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, `"}}`...)
}

func jsonMarshalString(s string) ([]byte, error) { return json.Marshal(s) }
