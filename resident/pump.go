package resident

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math/bits"
	"sync"

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

// pumpBuffers recycles read buffers, one pool per size from
// pumpMinBufferBytes to pumpBufferBytes: the buffer a stream outgrows
// starts another stream, and a finished exec's buffers serve the next exec
// instead of becoming garbage that the heap grows to hold until the next
// collection.
var pumpBuffers [pumpSizeClasses]sync.Pool

// pumpSizeClasses counts the sizes from 4 KiB doubling to 64 KiB.
const pumpSizeClasses = 5

func pumpSizeClass(size int) int { return bits.Len(uint(size/pumpMinBufferBytes)) - 1 }

func getPumpBuffer(size int) []byte {
	if b, ok := pumpBuffers[pumpSizeClass(size)].Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, size)
}

func putPumpBuffer(b []byte) { pumpBuffers[pumpSizeClass(len(b))].Put(&b) }

// pumpBuffer is a pump's read buffer, sized by the reads it sees. It never
// shrinks: a smaller buffer would split the engine's next large frame into
// several reads, each a frame to the host, and a pump blocked in Read holds
// its buffer whatever its size.
type pumpBuffer struct {
	buf []byte
}

func newPumpBuffer() *pumpBuffer { return &pumpBuffer{buf: getPumpBuffer(pumpMinBufferBytes)} }

// fit doubles the buffer, up to limit, when a read of n bytes filled it,
// and halves it to limit when it is larger (more pumps started since it
// grew: see pumpLimit).
func (b *pumpBuffer) fit(n, limit int) {
	size := len(b.buf)
	switch {
	case size > limit:
		putPumpBuffer(b.buf)
		b.buf = getPumpBuffer(limit)
	case n == size && size < limit:
		putPumpBuffer(b.buf)
		b.buf = getPumpBuffer(2 * size)
	}
}

// pumpBudget bounds the read buffers of all running pumps together once
// many run: a pump's buffer grows only to the largest size class whose
// share of it is within the budget. One exec's pumps (or sixteen execs')
// read 64 KiB at a time; 100 streaming execs' 200 pumps 8 KiB each, 1.6 MB
// instead of 6.8 (docs/performance.md, "Exec output: fewer, larger
// reads"): smaller frames to the host where the host's pipe is the
// bottleneck anyway.
const pumpBudget = 2 << 20

// pumpLimit is the largest buffer a pump may grow to while active pumps
// run.
func pumpLimit(active int64) int {
	size := pumpBufferBytes
	for size > pumpMinBufferBytes && int64(size)*active > pumpBudget {
		size /= 2
	}
	return size
}

// release returns the buffer to the pool; b must not be used after it.
func (b *pumpBuffer) release() {
	putPumpBuffer(b.buf)
	b.buf = nil
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
		buf := newPumpBuffer()
		s.pumps.Add(1)
		defer s.pumps.Add(-1)
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("output pump panicked", zap.Any("panic", p))
				_, _ = io.Copy(io.Discard, r)
			}
			// Nothing downstream keeps the buffer: the scrubber copies
			// what it holds back, and frames are encoded from it.
			buf.release()
			done <- res
		}()
		send := s.outputSender(execID, stream)
		scrubbed := s.scrub.Stream(send.emit)
		limit := s.opts.Limits.OutputCapBytes
		for {
			n, err := r.Read(buf.buf)
			if n > 0 {
				res.total += int64(n)
				keep := int64(n)
				if sent := res.total - int64(n) - res.dropped; sent+keep > limit {
					keep = max(limit-sent, 0)
				}
				res.dropped += int64(n) - keep
				if keep > 0 {
					_, _ = scrubbed.Write(buf.buf[:keep]) // a dead host only stops sending
					_ = send.flush()
				}
			}
			if err != nil {
				break
			}
			buf.fit(n, pumpLimit(s.pumps.Load()))
		}
		if res.dropped > 0 {
			// The cap cut the stream: a held-back tail may be the start of
			// a secret that the cap cut in two, so it is dropped, not
			// flushed, and counted.
			res.dropped += int64(scrubbed.Buffered())
			return
		}
		_ = scrubbed.Flush()
		_ = send.flush()
	}()
	return done
}

// outputSender frames scrubbed chunks as exec/output, one frame per read of
// the process's output: a scrubber's Write may emit the few bytes it had
// held back before the rest of the read, and a frame each would cost the
// host and the resident as much as a full one. So a small chunk waits in
// head and goes out in the same frame as the next; the pump flushes after
// every Write, so nothing waits for the next read. After the first failed
// write it stops trying: the host is gone and Serve is already ending.
type outputSender struct {
	s      *session
	prefix []byte
	head   []byte
	failed error
}

// maxHeadBytes is the largest chunk that waits for the next one.
const maxHeadBytes = 1 << 10

func (s *session) outputSender(execID, stream string) *outputSender {
	return &outputSender{s: s, prefix: outputPrefix(execID, stream)}
}

func (o *outputSender) emit(chunk []byte) error {
	if o.failed != nil || len(chunk) == 0 {
		return o.failed
	}
	if len(o.head) == 0 && len(chunk) <= maxHeadBytes {
		o.head = append(o.head, chunk...)
		return nil
	}
	if len(o.head) > 0 {
		// A head of whole base64 quanta encodes to the start of the
		// encoding of head and chunk together.
		t := min(len(chunk), (3-len(o.head)%3)%3)
		o.head = append(o.head, chunk[:t]...)
		chunk = chunk[t:]
	}
	o.failed = o.s.stream.writeData(o.prefix, o.head, chunk)
	o.head = o.head[:0]
	return o.failed
}

// flush sends the chunk waiting in head, if any.
func (o *outputSender) flush() error {
	if len(o.head) > 0 && o.failed == nil {
		o.failed = o.s.stream.writeData(o.prefix, o.head, nil)
	}
	o.head = o.head[:0]
	return o.failed
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
func dataBodyLen(prefix, head, data []byte) int {
	return len(prefix) + base64.StdEncoding.EncodedLen(len(head)+len(data)) + len(dataSuffix)
}

// appendDataBody appends prefix, head and data in base64 as one string,
// and the closing of the message: an exec/output or store/data body.
// len(head) is a multiple of 3 unless data is empty, so that the two
// encodings join into the encoding of both.
func appendDataBody(dst, prefix, head, data []byte) []byte {
	dst = append(dst, prefix...)
	dst = appendBase64(dst, head)
	dst = appendBase64(dst, data)
	return append(dst, dataSuffix...)
}

// appendBase64 encodes data frames; a variable so that BenchmarkOutputPump
// measures the standard library's encoder beside it in the same run.
var appendBase64 = protocol.AppendBase64

func jsonMarshalString(s string) ([]byte, error) { return json.Marshal(s) }
